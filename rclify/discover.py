"""Discovery: where a C tree uses the pthread mutex / condition variable API.

One spatch run over all files at once (semantic_patches/discover/pthread_sites.cocci): direct
pthread calls, mutex/cond definitions, struct fields, the functions whose body is a single
one-argument call (wrapper candidates), and the calls of the lock macros and likely wrapper
functions found beforehand in the text (the guess is confirmed by spatch; a wrapper the guess
missed gets a second run, `-D wrapper_calls_only`, over the files that call it).
#define directives are read here, textually: a function-like macro whose body is nothing but one
call of one argument (`pthread_mutex_lock(&(m))`, `do { pthread_mutex_unlock(&(m)); } while (0)`,
`{ ...; }`, `(void)...`) is a wrapper candidate.  SmPL can match `#define F(...) g(E)` but not the
statement-shaped bodies, so all macros go through the same small reader.  Wrapper candidates are
resolved to a fixed point: a macro or function is a lock wrapper when its single call is a
pthread lock/unlock/trylock or another lock wrapper (memcached: item_lock -> mutex_lock ->
pthread_mutex_lock).

Sites inside a wrapper macro's body are not reported (they are code only where the macro is used,
and those uses are reported with `via`); sites inside a wrapper *function* are reported like any
other call (function = the wrapper's name, via = '').
"""

import json
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rclify.errors import ParseError, ToolMissingError
from rclify.paths import SEMANTIC_PATCHES_DIR, PROJECT_ROOT, require

DISCOVER_DIR = SEMANTIC_PATCHES_DIR / "discover"
SMPL_LIB = SEMANTIC_PATCHES_DIR / "lib"

LOCK_PRIMITIVES = {
    "pthread_mutex_lock": "lock",
    "pthread_mutex_unlock": "unlock",
    "pthread_mutex_trylock": "trylock",
}
CALL_KINDS = {
    **LOCK_PRIMITIVES,
    "pthread_mutex_init": "mutex_init",
    "pthread_mutex_destroy": "mutex_destroy",
    "pthread_cond_wait": "cond_wait",
    "pthread_cond_timedwait": "cond_timedwait",
    "pthread_cond_signal": "cond_signal",
    "pthread_cond_broadcast": "cond_broadcast",
    "pthread_cond_init": "cond_init",
    "pthread_cond_destroy": "cond_destroy",
}
KINDS = (
    "lock", "unlock", "trylock", "mutex_init", "mutex_destroy", "static_mutex", "mutex_var",
    "cond_wait", "cond_timedwait", "cond_signal", "cond_broadcast", "cond_init", "cond_destroy",
    "static_cond", "other_mutex_api",
)
SPATCH_TIMEOUT_PER_FILE = 120  # seconds spatch may spend on one file before giving up on it


@dataclass(frozen=True)
class Site:
    kind: str  # one of KINDS
    file: str  # path relative to the tree root
    line: int  # 1-based
    column: int  # 0-based, as spatch reports
    function: str  # enclosing function, '' at file scope (and in macro bodies)
    expr: str  # the lock/cond expression as written (first argument), or the defined name
    via: str = ""  # '' for a direct pthread call, else the macro or wrapper function used
    # Additions beyond the brief's fields, all defaulted:
    args: tuple[str, ...] = ()  # every argument as written (cond_wait: (cond, mutex)); the wrapper call's for via sites
    scope: str = ""  # definitions: 'file', 'function' or 'struct NAME' / 'TYPEDEF' for fields
    array: bool = False  # definitions: an array of mutexes
    api: str = ""  # the pthread function called (other_mutex_api: which one), or the definition's type


@dataclass(frozen=True)
class Wrapper:
    name: str
    kind: str  # 'lock' | 'unlock' | 'trylock'
    params: tuple[str, ...]
    expr: str  # the locked expression in terms of params (and globals)
    is_macro: bool
    file: str
    line: int
    callee: str = ""  # what its body calls (pthread_mutex_lock, or another wrapper)


@dataclass
class Discovery:
    sites: list[Site]
    wrappers: dict[str, Wrapper]
    failures: dict[str, str]  # file -> first parse error
    seconds: float = 0.0
    macros_seen: int = 0  # function-like #defines read

    def of_kind(self, *kinds: str) -> list[Site]:
        return [s for s in self.sites if s.kind in kinds]


# --------------------------------------------------------------------------------------- spatch


def spatch_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    path = [str(SMPL_LIB), str(PROJECT_ROOT)]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.update(extra or {})
    return env


MACRO_FILE = SMPL_LIB / "macros.h"  # macros spatch cannot parse by itself


def run_spatch(patch: Path, root: Path, files: list[str], jobs: int, mode: str = "json",
               extra_env: dict[str, str] | None = None, extra_args: list[str] | None = None,
               timeout: int = 900) -> tuple[list[dict], dict[str, str], str]:
    """Runs one semantic patch over files (relative to root) in one spatch process.

    Returns (json records, {file: first parse error}, raw stdout).
    """
    require(patch)
    cmd = ["spatch", "--sp-file", str(patch), "-D", mode, "--no-includes", "--verbose-parsing",
           "--macro-file", str(MACRO_FILE),
           "--timeout", str(SPATCH_TIMEOUT_PER_FILE), "--no-show-diff", *(extra_args or [])]
    if jobs > 1 and len(files) > 1:
        cmd += ["-j", str(min(jobs, len(files)))]
    # spatch's file list goes in a file: trees may have thousands of files
    with tempfile.NamedTemporaryFile("w", suffix=".list", delete=False) as listing:
        listing.write("\n\n".join(files) + "\n")  # a blank line between files: one group each
    cmd += ["--file-groups", listing.name]
    try:
        proc = subprocess.run(cmd, cwd=root, env=spatch_env(extra_env), capture_output=True, text=True,
                              errors="surrogateescape", timeout=timeout)
    except FileNotFoundError:
        raise ToolMissingError("spatch (Coccinelle) is needed: apt-get install coccinelle") from None
    except subprocess.TimeoutExpired:
        raise ParseError(f"spatch {patch.name} did not finish within {timeout}s over {len(files)} files") from None
    finally:
        os.unlink(listing.name)
    if proc.returncode != 0:
        tail = "\n".join(line for line in proc.stderr.splitlines() if not line.startswith("Warning"))[-2000:]
        raise ParseError(f"spatch {patch.name} failed (exit {proc.returncode}): {tail.strip()}")
    records = [json.loads(line[len("RCLIFY-JSON "):]) for line in proc.stdout.splitlines()
               if line.startswith("RCLIFY-JSON ")]
    return records, parse_errors(proc.stderr, root), proc.stdout


_PARSE_ERROR = re.compile(
    r'^parse error\s*\n = File "(?P<file>[^"]+)", line (?P<line>\d+), column (?P<col>\d+), charpos = \d+\n'
    r"\s*around = '(?P<around>.*)',\n\s*whole content = (?P<content>.*)$",
    re.M,
)


def parse_errors(stderr: str, root: Path) -> dict[str, str]:
    """{file: first parse error}; errors inside #define directives that call no pthread mutex/cond
    function are ignored (spatch keeps such a macro body as tokens; no call site is lost)."""
    found: dict[str, tuple[int, str]] = {}
    for m in _PARSE_ERROR.finditer(stderr):
        file, line = m.group("file"), int(m.group("line"))
        define = _define_around(root / file, line)
        if define is not None and not re.search(r"\bpthread_(mutex|cond)_\w+\s*\(", define):
            continue
        message = f"{file}:{line}:{m.group('col')}: parse error near '{m.group('around')}': {m.group('content').strip()}"
        if file not in found or line < found[file][0]:
            found[file] = (line, message)
    return {file: message for file, (_, message) in found.items()}


# ---------------------------------------------------------------------------------- #define reader


@dataclass(frozen=True)
class MacroDef:
    name: str
    params: tuple[str, ...]
    body: str
    file: str
    line: int  # first line of the directive
    last_line: int


_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)(\(([^)]*)\))?[ \t]*(.*)$", re.S)


def read_defines(path: Path, rel: str) -> list[MacroDef]:
    """Every #define of a file (function-like or not), continuation lines joined."""
    try:
        lines = path.read_text(errors="surrogateescape").split("\n")
    except OSError:
        return []
    out, i = [], 0
    while i < len(lines):
        start, text = i, lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i]
        i += 1
        m = _DEFINE.match(text)
        if m:
            params = tuple(p.strip() for p in (m.group(3) or "").split(",") if p.strip()) if m.group(2) else None
            body = _strip_comments(m.group(4)).strip()
            out.append(MacroDef(m.group(1), params if params is not None else ("<object>",), body, rel, start + 1, i))
    return out


def _define_around(path: Path, line: int) -> str | None:
    """The text of the #define directive covering line, or None."""
    try:
        lines = path.read_text(errors="surrogateescape").split("\n")
    except OSError:
        return None
    at = line - 1
    while at > 0 and lines[at - 1].endswith("\\"):
        at -= 1
    if 0 <= at < len(lines) and re.match(r"^\s*#\s*define\b", lines[at]):
        text, j = lines[at], at
        while text.endswith("\\") and j + 1 < len(lines):
            j += 1
            text = text[:-1] + lines[j]
        return text
    return None


def _strip_comments(code: str) -> str:
    return re.sub(r"//.*$", "", re.sub(r"/\*.*?\*/", " ", code, flags=re.S))


def single_call(body: str) -> tuple[str, list[str]] | None:
    """(callee, args) when a macro body is nothing but one call, else None."""
    body = body.strip()
    for _ in range(6):
        before = body
        body = body.strip().rstrip(";").strip()
        m = re.fullmatch(r"do\s*\{(.*)\}\s*while\s*\(\s*0\s*\)", body, re.S)
        if m:
            body = m.group(1)
            continue
        if body.startswith("{") and body.endswith("}") and _balanced(body[1:-1]):
            body = body[1:-1]
            continue
        m = re.fullmatch(r"\(\s*void\s*\)(.*)", body, re.S)
        if m:
            body = m.group(1)
            continue
        if body.startswith("(") and body.endswith(")") and _balanced(body[1:-1]):
            body = body[1:-1]
            continue
        if body == before:
            break
    m = re.fullmatch(r"([A-Za-z_]\w*)\s*\((.*)\)", body.strip(), re.S)
    if not m or not _balanced(m.group(2)):
        return None
    return m.group(1), split_args(m.group(2))


def _balanced(code: str) -> bool:
    depth = 0
    for ch in code:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0:
            return False
    return depth == 0


def split_args(code: str) -> list[str]:
    args, depth, cur = [], 0, ""
    for ch in code:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip() or args:
        args.append(cur.strip())
    return args


# ------------------------------------------------------------------------------- wrapper inference

_SIMPLE = re.compile(r"[A-Za-z_]\w*(?:\s*(?:\.|->)\s*\w+|\s*\[[^\[\]]*\])*")


def substitute(expr: str, params: tuple[str, ...], args: list[str]) -> str:
    """expr with each parameter replaced by the argument passed for it.

    `(m)` around a parameter is dropped when the argument is a plain name or member/index chain,
    so LOCK(cache_lock) with `&(m)` gives `&cache_lock`.
    """
    mapping = {p: a for p, a in zip(params, args)}
    if not mapping:
        return expr

    def repl(match: re.Match) -> str:
        name = match.group(2) or match.group(4)
        arg = mapping[name]
        if match.group(2) is not None:  # the parameter was parenthesised
            return arg if _SIMPLE.fullmatch(arg) else f"({arg})"
        return arg

    names = "|".join(re.escape(p) for p in sorted(mapping, key=len, reverse=True))
    pattern = re.compile(rf"(\(\s*({names})\s*\))|(\b({names})\b)")
    return pattern.sub(repl, expr)


def _param_names(params: str) -> tuple[str, ...]:
    names = []
    for param in split_args(params):
        param = re.sub(r"\[[^\]]*\]", "", param).strip()
        if not param or param == "void" or param == "...":
            continue
        m = re.search(r"(\w+)\s*$", param)
        if m:
            names.append(m.group(1))
    return tuple(names)


def infer_wrappers(macros: list[MacroDef], functions: list[dict]) -> dict[str, Wrapper]:
    """Macros and functions whose single call reaches a pthread lock/unlock/trylock."""
    candidates: dict[str, tuple[str, list[str], tuple[str, ...], bool, str, int]] = {}
    for mac in macros:
        if mac.params == ("<object>",):
            continue
        call = single_call(mac.body)
        if call and len(call[1]) == 1:
            candidates.setdefault(mac.name, (call[0], call[1], mac.params, True, mac.file, mac.line))
    for rec in functions:
        if len(rec["args"]) == 1 and rec["name"] not in LOCK_PRIMITIVES:
            candidates.setdefault(rec["name"], (rec["callee"], rec["args"], _param_names(rec["params"]),
                                                False, rec["file"], rec["line"]))
    wrappers: dict[str, Wrapper] = {}
    changed = True
    while changed:
        changed = False
        for name, (callee, args, params, is_macro, file, line) in candidates.items():
            if name in wrappers or name == callee:
                continue
            if callee in LOCK_PRIMITIVES:
                kind, expr = LOCK_PRIMITIVES[callee], args[0]
            elif callee in wrappers:
                inner = wrappers[callee]
                kind, expr = inner.kind, substitute(inner.expr, inner.params, args)
            else:
                continue
            wrappers[name] = Wrapper(name, kind, params, expr, is_macro, file, line, callee)
            changed = True
    return wrappers


# ------------------------------------------------------------------------------------- discovery


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


_PTHREAD_CALL = re.compile(r"\bpthread_(?:mutex|cond)_\w+\s*\(")


def code_only(text: str) -> str:
    """text with comments and string/char literal contents blanked, line structure kept."""
    def blank(match: re.Match) -> str:
        chunk = match.group(0)
        if chunk.startswith(("/", )):
            return re.sub(r"[^\n]", " ", chunk)
        return chunk[0] + re.sub(r"[^\n]", " ", chunk[1:-1]) + chunk[-1]
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, text, flags=re.S)


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
        for m in _PTHREAD_CALL.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            if line not in seen.get(file, set()):
                name = m.group(0).rstrip("( \t")
                out[file] = (f"{file}:{line}: {name} call not seen by spatch (the function could not be "
                             "analysed, e.g. computed goto, or the code is not C spatch understands)")
                break
    return out


def _run_discover(root: Path, files: list[str], jobs: int, names: list[str],
                  args: list[str] | None = None) -> tuple[list[dict], dict[str, str]]:
    if not files:
        return [], {}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(names, handle)
    try:
        records, failures, _ = run_spatch(DISCOVER_DIR / "pthread_sites.cocci", root, files, jobs,
                                          extra_env={"RCLIFY_WRAPPERS": handle.name}, extra_args=args)
    finally:
        os.unlink(handle.name)
    return records, failures


_ONE_CALL_BODY = re.compile(
    r"\b([A-Za-z_]\w*)\s*\([^;{}()]*\)\s*\{\s*(?:return\s+)?(?:\(\s*void\s*\)\s*)?([A-Za-z_]\w*)\s*\("
    r"(?:[^;{}()]|\((?:[^;{}()]|\([^;{}()]*\))*\))*\)\s*;\s*\}")


def likely_wrapper_functions(texts: dict[str, str], macros: list[MacroDef]) -> set[str]:
    """Names of functions whose text looks like `T f(params) { [return] [(void)] g(...); }` with g a
    lock primitive, a lock macro or another such function: a guess spatch confirms."""
    calls: dict[str, str] = {}
    for text in texts.values():
        for m in _ONE_CALL_BODY.finditer(code_only(text)):
            if m.group(1) not in ("if", "while", "for", "switch", "return", "sizeof"):
                calls.setdefault(m.group(1), m.group(2))
    known = set(LOCK_PRIMITIVES) | set(infer_wrappers(macros, []))
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, callee in calls.items():
            if name not in found and (callee in known or callee in found):
                found.add(name)
                changed = True
    return found


def _names_pattern(names: list[str]) -> re.Pattern:
    return re.compile(r"\b(?:" + "|".join(names) + r")\s*\(")


def _is_extern(root: Path, rec: dict) -> bool:
    try:
        line = (root / rec["file"]).read_text(errors="surrogateescape").split("\n")[rec["line"] - 1]
    except (OSError, IndexError):
        return False
    return re.search(r"\bextern\b", line[: rec["column"]]) is not None


def discover(root: Path, files: list[Path], jobs: int = 1,
             progress: Callable[[str], None] | None = None) -> Discovery:
    """Finds the pthread mutex/cond sites of files (under root), through lock macros and wrappers."""
    started = time.monotonic()
    say = progress or (lambda message: None)
    root = Path(root)
    rel = relative_files(root, files)
    if not rel:
        return Discovery([], {}, {})
    texts = {f: (root / f).read_text(errors="surrogateescape") for f in rel}
    macros = [m for f in rel for m in read_defines(root / f, f)]
    # Lock macros need only the #defines; likely wrapper functions are guessed from the text
    # (confirmed or dropped by spatch's one_call_function rule) so that one spatch run also finds
    # their call sites.  Files that mention neither pthread_ nor one of these names cannot lock.
    listed = sorted(set(infer_wrappers(macros, [])) | likely_wrapper_functions(texts, macros))
    calls_of_listed = _names_pattern(list(map(re.escape, listed)))
    scanned = [f for f in rel if "pthread_" in texts[f] or (listed and calls_of_listed.search(texts[f]))]
    say(f"discover: spatch pthread_sites.cocci over {len(scanned)} of {len(rel)} files ({len(listed)} names of likely wrappers)")
    records, failures = _run_discover(root, scanned, jobs, listed)
    for file, message in unseen_calls(texts, scanned, records).items():
        failures.setdefault(file, message)

    functions = [r for r in records if r["kind"] == "one_call_function"]
    wrappers = infer_wrappers(macros, functions)
    missing = sorted(set(wrappers) - set(listed))
    if missing:  # wrappers the text scan did not guess: a second run for their calls only
        calls_of_missing = _names_pattern(list(map(re.escape, missing)))
        using = [f for f in rel if calls_of_missing.search(texts[f])]
        say(f"discover: spatch pthread_sites.cocci -D wrapper_calls_only over {len(using)} files for {', '.join(missing)}")
        more, more_failures = _run_discover(root, using, jobs, missing, ["-D", "wrapper_calls_only"])
        records += more
        for file, message in more_failures.items():
            failures.setdefault(file, message)
    # every #define whose body is one call of a lock primitive or wrapper (a name may be defined
    # in several files: each definition counts)
    wrapper_macro_lines = set()
    for mac in macros:
        call = single_call(mac.body) if mac.params != ("<object>",) else None
        if call and len(call[1]) == 1 and (call[0] in LOCK_PRIMITIVES or call[0] in wrappers):
            wrapper_macro_lines.update((mac.file, line) for line in range(mac.line, mac.last_line + 1))

    sites: list[Site] = []
    for rec in records:
        if rec["kind"] == "call":
            if (rec["file"], rec["line"]) in wrapper_macro_lines:
                continue
            kind = CALL_KINDS.get(rec["name"], "other_mutex_api")
            args = tuple(rec["args"])
            sites.append(Site(kind, rec["file"], rec["line"], rec["column"], rec["function"],
                              args[0] if args else "", "", args, api=rec["name"]))
        elif rec["kind"] == "definition":
            if _is_extern(root, rec):
                continue
            init = rec.get("init") or ""
            if rec["type"] == "pthread_cond_t":
                if "PTHREAD_COND_INITIALIZER" not in init:
                    continue
                kind = "static_cond"
            else:
                kind = "static_mutex" if re.search(r"\bPTHREAD_\w*MUTEX_INITIALIZER\w*", init) else "mutex_var"
            sites.append(Site(kind, rec["file"], rec["line"], rec["column"], rec["function"], rec["name"],
                              scope="function" if rec["function"] else "file", array=bool(rec.get("array")),
                              api=rec["type"]))
        elif rec["kind"] == "field":
            sites.append(Site("mutex_var", rec["file"], rec["line"], rec["column"], "", rec["name"],
                              scope=rec["container"], api=rec["type"]))

    for rec in records:
        if rec["kind"] != "wrapper_call" or (rec["file"], rec["line"]) in wrapper_macro_lines:
            continue  # (one wrapper macro calling another: reached through the outer one's uses)
        wrapper = wrappers.get(rec["name"])
        if wrapper is None:
            continue  # listed but not confirmed as a wrapper
        args = tuple(rec["args"])
        sites.append(Site(wrapper.kind, rec["file"], rec["line"], rec["column"], rec["function"],
                          substitute(wrapper.expr, wrapper.params, list(args)), wrapper.name, args,
                          api=wrapper.name))

    sites = sorted(set(sites), key=lambda s: (s.file, s.line, s.column, s.kind))
    result = Discovery(sites, wrappers, dict(sorted(failures.items())), time.monotonic() - started,
                       sum(1 for m in macros if m.params != ("<object>",)))
    say(f"discover: {len(sites)} sites, {len(wrappers)} wrappers, {len(failures)} files with parse errors "
        f"({result.seconds:.1f}s)")
    return result
