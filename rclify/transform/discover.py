"""Discovery: where a C tree defines, initialises and calls the pthread mutex / condvar API.

One spatch run over every file that mentions `pthread_` (semantic_patches/discover/
pthread_sites.cocci): direct pthread calls (inside #define bodies too), mutex and cond
definitions, and struct fields; pthread_rwlock_* / pthread_spin_* calls too, which rclify does
not handle (rwlock_api / spin_api sites: the report counts and lists them).  What the tree's lock macros and wrapper functions are is not
decided here but by rclify/transform/vocabulary_inference.py, once, with libclang.

The sites feed the lock table (one lock_config.h entry per allocation site) and the API rewrite;
the parse errors feed the report.  spatch skips some functions silently (computed goto), so its
calls are compared with a plain token scan and a file with missing calls is a failure.
"""

import re
import time
from pathlib import Path
from typing import Callable

from rclify import pthread_api
from rclify.ctext import tree_macros
from rclify.ctext.spatch import run_spatch
from rclify.ctext.preprocessor import define_around
from rclify.ctext.tokens import call_arguments, code_only
from rclify.ctext.tree_macros import expand_storage, storage_classes
from rclify.paths import SEMANTIC_PATCHES_DIR
from rclify.ctext.languages import by_language
from rclify.lock_identity import init_aliases
from rclify.lock_identity.discovered_sites import Discovery, Site

PATCH = SEMANTIC_PATCHES_DIR / "discover" / "pthread_sites.cocci"

CALL_KINDS = pthread_api.DISCOVERED
def relative_files(root: Path, files: list[Path]) -> list[str]:
    """files as sorted unique paths relative to root; a relative path is taken from the current
    directory when it exists there, else from root."""
    out = []
    for f in files:
        p = Path(f)
        if not p.is_absolute():
            p = p if p.exists() else Path(root) / p
        out.append(str(p.resolve().relative_to(Path(root).resolve())))
    return sorted(set(out))


def unseen_calls(texts: dict[str, str], files: list[str], records: list[dict]) -> dict[str, str]:
    """Safety net: pthread calls in a file's text that spatch did not report.

    spatch skips some functions silently (computed goto: "FLOW: not handling computed goto yet"),
    so the sites it reports are compared with a plain token scan; a file with missing calls is a
    failure naming the first one.
    """
    seen: dict[str, set[int]] = {}
    for rec in records:
        if rec["kind"] == "call":
            seen.setdefault(rec["file"], set()).add(rec["line"])
    out = {}
    for file in files:
        code = code_only(texts[file])
        for m in pthread_api.CALL.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            if line not in seen.get(file, set()):
                name = m.group(0).rstrip("( \t")
                out[file] = (f"{file}:{line}: {name} call not seen by spatch (the function could not be "
                             "analysed, e.g. computed goto, or the code is not C spatch understands)")
                break
    return out


def define_calls(texts: dict[str, str], files: list[str], records: list[dict]) -> list[dict]:
    """Call records for the pthread calls of #define bodies spatch could not parse (a scoped
    lock macro: `#define WITH_LOCK(m) for (...; ...; pthread_mutex_unlock(&(m)))`, a statement
    header, is no C it parses; its uses are), read from the text as spatch reports a call in a
    macro body: at file scope, with its arguments as written."""
    seen = {(rec["file"], rec["line"]) for rec in records if rec["kind"] == "call"}
    out = []
    for file in files:
        text = texts[file]
        code = code_only(text)
        for m in pthread_api.CALL.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            if (file, line) in seen or define_around(code, line) is None:
                continue
            found = call_arguments(text, m.end() - 1)
            name = m.group(0).rstrip("( \t")
            column = m.start() - (code.rfind("\n", 0, m.start()) + 1)
            out.append({"kind": "call", "name": name, "args": found[0] if found else [], "file": file,
                        "line": line, "column": column, "function": ""})
    return out


def _is_extern(texts: dict[str, str], rec: dict, storage: dict[str, str] | None = None) -> bool:
    lines = texts[rec["file"]].split("\n")
    line = lines[rec["line"] - 1] if rec["line"] <= len(lines) else ""
    return re.search(r"\bextern\b", expand_storage(line[: rec["column"]], storage or {})) is not None


def _declaration(texts: dict[str, str], rec: dict, storage: dict[str, str] | None = None) -> tuple[bool, bool]:
    """(static, alone) for the definition at rec: its declaration says `static` (or a storage
    macro of the tree does: pigz's `local`, see tree_macros.storage_classes); it declares no
    other name (no comma outside brackets between the declaration's start and its `;`)."""
    code = code_only(texts[rec["file"]])
    lines = code.split("\n")
    at = sum(len(line) + 1 for line in lines[: rec["line"] - 1]) + rec["column"]
    start = at
    while start > 0 and code[start - 1] not in ";{}":
        start -= 1
    end, depth = at, 0
    while end < len(code) and not (code[end] == ";" and depth == 0):
        depth += code[end] in "([{"
        depth -= code[end] in ")]}"
        end += 1
    head = code[start:at]
    head = "\n".join(line for line in head.split("\n") if not line.lstrip().startswith("#"))
    head = expand_storage(head, storage or {})
    tail, depth, comma = code[at:end], 0, False
    for ch in tail:
        depth += ch in "([{"
        depth -= ch in ")]}"
        comma |= ch == "," and depth == 0
    return re.search(r"\bstatic\b", head) is not None, not comma and "," not in head


def _site(rec: dict, texts: dict[str, str], storage: dict[str, str] | None = None) -> Site | None:
    if rec["kind"] == "call":
        args = tuple(rec["args"])
        return Site(CALL_KINDS.get(rec["name"], "other_mutex_api"), rec["file"], rec["line"], rec["column"],
                    rec["function"], args[0] if args else "", args, api=rec["name"])
    if rec["kind"] == "other_lock_call":  # pthread_rwlock_* / pthread_spin_*
        args = tuple(rec["args"])
        kind = "rwlock_api" if rec["name"].startswith("pthread_rwlock_") else "spin_api"
        return Site(kind, rec["file"], rec["line"], rec["column"], rec["function"], args[0] if args else "", args,
                    api=rec["name"])
    if rec["kind"] == "definition":
        if _is_extern(texts, rec, storage):
            return None
        init = rec.get("init") or ""
        if rec["type"] == "pthread_cond_t":
            if "PTHREAD_COND_INITIALIZER" not in init:
                return None
            kind = "static_cond"
        else:
            kind = "static_mutex" if re.search(r"\bPTHREAD_\w*(MUTEX|RWLOCK)_INITIALIZER\w*", init) else "mutex_var"
        static, alone = _declaration(texts, rec, storage)
        return Site(kind, rec["file"], rec["line"], rec["column"], rec["function"], rec["name"],
                    scope="function" if rec["function"] else "file", array=bool(rec.get("array")), api=rec["type"],
                    init=init, static=static, alone=alone)
    if rec["kind"] == "field":
        return Site("mutex_var", rec["file"], rec["line"], rec["column"], "", rec["name"],
                    scope=rec["container"], api=rec["type"])
    return None


def discover(root: Path, files: list[Path], jobs: int = 1, progress: Callable[[str], None] | None = None,
             macro_file: Path | None = None, texts: dict[str, str] | None = None) -> Discovery:
    """Finds the pthread mutex/cond sites of files (under root).  macro_file: spatch's (spatch.py);
    by default one with the declaration and loop header macros of files (ctext/tree_macros.py).
    texts: the files' texts by relative path, where the caller has them (ctext/source_tree.py)."""
    started = time.monotonic()
    say = progress or (lambda message: None)
    root = Path(root)
    rel = relative_files(root, files)
    texts = {f: texts[f] if texts is not None else (root / f).read_text(errors="surrogateescape") for f in rel}
    scanned = [f for f in rel if "pthread_" in texts[f]]
    if not scanned:
        return Discovery([], {})
    say(f"discover: spatch {PATCH.name} over {len(scanned)} of {len(rel)} files")
    records, failures = [], {}
    own_macros = macro_file is None
    if own_macros:
        macro_file = tree_macros.macro_file_for(texts)[0]
    try:
        for group, language in by_language(scanned):  # C++ files: spatch --c++, where it parses them
            found, failed, _ = run_spatch(PATCH, root, group, jobs, extra_args=language, macro_file=macro_file,
                                          progress=progress)
            records += found
            failures |= failed
    finally:
        if own_macros:
            macro_file.unlink(missing_ok=True)
    records += define_calls(texts, scanned, records)
    records += init_aliases.call_records(texts, scanned)  # `#define my_init pthread_mutex_init`
    for file, message in unseen_calls(texts, scanned, records).items():
        failures.setdefault(file, message)
    storage = storage_classes(texts)
    sites = {site for rec in records if (site := _site(rec, texts, storage)) is not None}
    result = Discovery(sorted(sites, key=lambda s: (s.file, s.line, s.column, s.kind)),
                       dict(sorted(failures.items())), time.monotonic() - started)
    say(f"discover: {len(result.sites)} sites, {len(failures)} files with parse errors ({result.seconds:.1f}s)")
    return result
