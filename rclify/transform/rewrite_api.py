"""API rewrite: pthread mutex / condition variable code onto the rclify runtime (rclify.h).

Runs the semantic patches of semantic_patches/api/ over copies of the files (one spatch process
per step of STEPS over all files that mention its tokens), then two small text passes:
  * what spatch left of the pthread API gets the same renames textually, token by token (comments
    and strings untouched), with RCL_CONFIG_DEFAULT / NULL where a lock configuration would go,
    each change a note: #define bodies spatch does not parse as C (e.g.
    `#define DECL(n) static pthread_mutex_t n = PTHREAD_MUTEX_INITIALIZER`; calls inside macro
    bodies that do parse, like `#define LOCK(m) pthread_mutex_lock(&(m))`, are rewritten by spatch
    itself), and code spatch did not match (functions with computed goto, code after a parse
    error, memcached's X-macro stats functions);
  * in C++ files (spatch --c++ parses little C++: classes, templates and lambdas are left to the
    text pass), RCL_CONFIG_REF(cfg), a C compound literal's address, becomes a lambda returning a
    static configuration (rclify/transform/cxx.py);
  * each call of one of the tree's lock helpers that has a lock_config.h entry of its own is
    wrapped in RCL_LOCK_SITE (rclify/lock_identity/lock_helpers/);
  * every changed file gets `#include "<relative path to lock_config.h>"` after its last
    `#include <pthread.h>` (else after its first #include, else at the top).
Nothing is written into the tree: the new texts are returned.  Running it again over its own
output changes nothing.
"""

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable

from rclify.ctext.spatch import MACRO_FILE, chain, run_spatch
from rclify.ctext.preprocessor import guards_at
from rclify.ctext.tokens import code_only
from rclify.ctext.languages import by_language, is_cxx
from rclify.transform.cxx import config_refs_for_cxx
from rclify.lock_identity import init_aliases
from rclify.transform.discover import relative_files
from rclify.transform.kept_posix import KeptPosix
from rclify.lock_identity.lock_helpers import wrap_calls
from rclify.lock_identity.lock_table import LockSite, LockTable
from rclify.lock_config import macro_suffix
from rclify.paths import SEMANTIC_PATCHES_DIR
from rclify.pthread_api import RWLOCK
from rclify.templates import templates

API_DIR = SEMANTIC_PATCHES_DIR / "api"

# The patches, in order, each step one spatch process: (its patches, a regex a file must match to
# be worth running it on with a string it must then contain, for each patch).  initializers.cocci
# and types.cocci run as one: spatch applies a semantic patch's rules in order, each to what the
# ones before made, and the retyping selects by no position (only the first transforming rule of a
# patch may, spatch 1.1.1: zero_init.cocci's and calls.cocci's do, and calls.cocci's scripts read
# the text at their positions as it is after the retyping), so one pass writes what two did, for
# one start of spatch and one parse of each file.  A literal first: a substring test is much
# faster than a search for a pattern that opens with \b.
STEPS = [
    (("zero_init.cocci",), None),  # the files where the lock table gives a zero-initialised definition an initializer
    (("initializers.cocci", "types.cocci"), [(re.compile(r"\bPTHREAD_\w*(MUTEX|COND|RWLOCK)_INITIALIZER"), "PTHREAD_"),
                                            (re.compile(r"\bpthread_(mutex|cond|rwlock)_t\b"), "pthread_")]),
    (("calls.cocci",), [(re.compile(r"\bpthread_(mutex|cond|mutexattr|rwlock)_\w+\s*\("), "pthread_")]),
]

# the pthread names the text pass replaces, each a whole word: name -> replacement
_DEFINE_TOKENS = {
    "pthread_mutex_t": "rcl_mutex_t",
    "pthread_cond_t": "rcl_cond_t",
    "PTHREAD_MUTEX_INITIALIZER": "RCL_MUTEX_INITIALIZER(RCL_CONFIG_DEFAULT)",
    "PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP": "RCL_RECURSIVE_MUTEX_INITIALIZER(RCL_CONFIG_DEFAULT)",
    "PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP": "RCL_ERRORCHECK_MUTEX_INITIALIZER(RCL_CONFIG_DEFAULT)",
    "PTHREAD_COND_INITIALIZER": "RCL_COND_INITIALIZER",
    "pthread_rwlock_t": "rcl_rwlock_t",
    "PTHREAD_RWLOCK_INITIALIZER": "RCL_RWLOCK_INITIALIZER(RCL_CONFIG_DEFAULT)",
    **{f"pthread_{op}": f"rcl_{op}" for op in (
        "mutex_lock", "mutex_unlock", "mutex_trylock", "mutex_timedlock", "mutex_clocklock", "mutex_destroy",
        "cond_wait", "cond_timedwait", "cond_clockwait", "cond_signal", "cond_broadcast", "cond_init",
        "cond_destroy")},
    **{f: "rcl_" + f[len("pthread_"):] for f in RWLOCK if f != "pthread_rwlock_init"},
}
_PTHREAD_WORD = re.compile(r"\b(?:pthread|PTHREAD)_\w*")  # one scan: the words above are among these
_DEFINE_INIT = re.compile(r"\bpthread_(mutex|rwlock)_init\s*\(")
_PTHREAD_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<pthread\.h>.*$", re.M)
_ANY_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b.*$", re.M)


class ApiRewrite(dict):
    """{path under root: new text} for each changed file, plus what the rewrite found:
    records  every match the patches reported (json records: kind, file, line, ...)
    errors   'file:line: message' for calls that cannot be rewritten
    notes    'file:line: message' for things done or kept that a user should know
    unwrapped 'file:line: message' for calls of lock helpers with an entry of their own that were
             not found again to wrap (their locks keep the helper's configuration): warnings
    failures {file: first parse error}: parts of those files may not have been rewritten
    """

    def __init__(self):
        super().__init__()
        self.records: list[dict] = []
        self.errors: list[str] = []
        self.notes: list[str] = []
        self.unwrapped: list[str] = []
        self.failures: dict[str, str] = {}
        self.seconds = 0.0


def rewrite_api(root: Path, files: list[Path], sites: list[LockSite], config_header: Path, jobs: int = 1,
                progress: Callable[[str], None] | None = None, kept: KeptPosix | None = None,
                macro_file: Path = MACRO_FILE) -> ApiRewrite:
    """The new text of each file the API rewrite changes: {root / relative path: text} (root as
    given), an ApiRewrite dict that also carries errors, notes and failures.

    root: the tree; files: its C files (absolute or relative to root); sites: the lock sites
    (rclify.lock_identity.lock_table); config_header: where lock_config.h is (or will be); kept: the
    locks that stay pthread mutexes (rclify.transform.kept_posix): hidden from the patches and the
    text pass; macro_file: spatch's (rclify.ctext.spatch).
    """
    started = time.monotonic()
    say = progress or (lambda message: None)
    given = Path(root)  # keys of the result: root as the caller spelled it, / the relative path
    root = given.resolve()
    result = ApiRewrite()
    rel = relative_files(root, files)
    table = LockTable(list(sites))
    with tempfile.TemporaryDirectory(prefix="rclify-api-") as tmp:
        work = Path(tmp) / "tree"
        for f in rel:
            (work / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / f, work / f)
            if kept is not None and kept.kept:
                (work / f).write_text(kept.mask((work / f).read_text(errors="surrogateescape"), f),
                                      errors="surrogateescape")
        sites_json = Path(tmp) / "lock_sites.json"
        sites_json.write_text(json.dumps(table.to_json()))
        zero = {s.file for s in table.sites if s.zero_init == "initializer"}
        for patches, wanted in STEPS:
            todo = [f for f in rel if f in zero] if wanted is None else \
                [f for f in rel if _mentions(work / f, wanted)]
            if not todo:
                continue
            patch = chain([API_DIR / name for name in patches], Path(tmp) / "+".join(patches))
            say(f"api: spatch {patch.name} over {len(todo)} files")
            for group, language in by_language(todo):  # C++ files: spatch --c++, where it parses them
                records, failures, _ = run_spatch(patch, work, group, jobs, mode="json",
                                                  extra_env={"RCLIFY_LOCK_SITES": str(sites_json)},
                                                  extra_args=[*language, "-D", "patch", "--in-place"],
                                                  macro_file=macro_file)
                result.records += records
                for file, message in failures.items():
                    result.failures.setdefault(file, message)
        for rec in result.records:
            where = f"{rec['file']}:{rec['line']}"
            if rec["kind"] == "zero_initializer" and rec.get("lock_id") in table.by_id:
                where = f"{rec['file']}:{table.by_id[rec['lock_id']].line}"  # the definition's line before extraction
            if rec["kind"] == "error":
                result.errors.append(f"{where}: {rec.get('message', rec.get('text', ''))}")
            elif rec["kind"] in ("anonymous_initializer", "initializer_kind_dropped", "attr", "zero_initializer") or (rec["kind"] == "mutex_init" and not rec.get("lock_id")):
                result.notes.append(f"{where}: {rec.get('message') or 'pthread_mutex_init of no known lock site: default configuration'}")
        for f in rel:
            old = (root / f).read_text(errors="surrogateescape")
            new, notes = init_aliases.rewrite((work / f).read_text(errors="surrogateescape"), f,
                                              lambda file, line: _alias_config(table, file, line))
            result.notes += notes
            new, notes = rewrite_leftovers(new, f)
            if "rclkeep_" in new or "RCLKEEP_" in new:
                new = KeptPosix.unmask(new)
            new = config_refs_for_cxx(new) if is_cxx(f) else new
            result.notes += notes
            new, unwrapped = wrap_calls(new, f, table.sites, kept.lock_ids if kept is not None else set())
            result.unwrapped += unwrapped
            for site in table.sites:
                if site.zero_init == "constructor" and site.constructor_in == f:
                    new, note = add_lock_id_constructor(new, site)
                    result.notes.append(f"{f}: {note}")
            if new != old:
                header = os.path.relpath(Path(config_header).resolve(), (root / f).parent)
                result[given / f] = add_include(new, header)
    result.errors.sort()
    result.notes.sort()
    # by file: the order spatch's workers (-j) and the steps report them in is no order of the tree's
    result.failures = dict(sorted(result.failures.items()))
    result.seconds = time.monotonic() - started
    say(f"api: {len(result)} files changed, {len(result.errors)} errors, {len(result.failures)} files with parse errors "
        f"({result.seconds:.1f}s)")
    return result


def _mentions(path: Path, wanted: list[tuple[re.Pattern, str]]) -> bool:
    text = path.read_text(errors="surrogateescape")
    return any(literal in text and pattern.search(text) is not None for pattern, literal in wanted)


def _alias_config(table: LockTable, file: str, line: int) -> str:
    """The configuration argument of the init an object-like alias of pthread_mutex_init stands for."""
    site = table.for_init(init_aliases.PARAMS[0], file, "", line)
    return f"RCL_CONFIG_REF({site.macro})" if site else "NULL"


def rewrite_leftovers(text: str, file: str = "") -> tuple[str, list[str]]:
    """The text pass: what spatch left of the pthread API, token by token (comments and strings
    untouched).  That is #define bodies spatch does not parse as C, and code it did not match
    (a function it could not analyse, e.g. computed goto, or one that failed to parse).
    pthread_mutex_init gets a NULL configuration, static initializers RCL_CONFIG_DEFAULT: each
    change is a note naming its line."""
    if "pthread_" not in text and "PTHREAD_" not in text:  # every pattern below names one: most files
        return text, []
    code = code_only(text)
    edits: list[tuple[int, int, str, str]] = []  # start, end, replacement, what
    for m in _PTHREAD_WORD.finditer(code):
        replacement = _DEFINE_TOKENS.get(m.group(0))
        if replacement is not None:
            edits.append((m.start(), m.end(), replacement, m.group(0)))
    for m in _DEFINE_INIT.finditer(code):
        depth, j = 0, m.end() - 1
        while j < len(code):
            depth += code[j] == "("
            depth -= code[j] == ")"
            if depth == 0:
                break
            j += 1
        if j < len(code):
            edits.append((m.start(), m.end(), f"rcl_{m.group(1)}_init(", f"pthread_{m.group(1)}_init"))
            edits.append((j, j, ", NULL", ""))
    # `#if defined(PTHREAD_MUTEX_INITIALIZER)` asks whether pthread.h defines it: still true, left alone
    edits = [e for e in edits if not _in_conditional_directive(code, e[0])]
    notes = []
    for start, end, replacement, what in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
        if what:
            line = code.count("\n", 0, start) + 1
            where = "in #define " + _define_name(code, start) if _define_name(code, start) else "code spatch did not rewrite"
            notes.append(f"{file}:{line}: {what} rewritten textually ({where})")
    return text, sorted(set(notes))


def _in_conditional_directive(code: str, at: int) -> bool:
    """Does offset at lie in an #if/#ifdef/#ifndef/#elif line (continuations included)?"""
    begin = code.rfind("\n", 0, at) + 1
    while begin > 1 and code[begin - 2] == "\\":
        begin = code.rfind("\n", 0, begin - 1) + 1
    return re.match(r"[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif)\b", code[begin:]) is not None


def add_lock_id_constructor(text: str, site: LockSite) -> tuple[str, str]:
    """text with C that gives a zero-initialised lock its lock_config.h entry before main()
    (templates/api/lock_id_constructor.c.j2): at the end of a .c file, or right after the lock's
    definition for a static lock of a header (each file that includes it has its own).  Returns
    the new text and a note."""
    array = "[]" in site.normalized
    header = site.constructor_in.endswith(".h")
    if site.member:
        why = "a field of a struct variable has no initializer of its own"
    elif array:
        why = "an array has no one initializer for every element"
    elif header:
        why = "a static lock in a header is one lock per file that includes it (an initializer makes gcc warn where one does not use it)"
    elif site.file != site.constructor_in:
        why = f"{site.file} is included by several files, where an initializer would define it in each"
    else:
        why = "its declaration defines several names"
    c = templates().get_template("api/lock_id_constructor.c.j2").render(
        site=site, array=array, why=why, suffix=macro_suffix(site.lock_id), where=f"{site.file}:{site.line}",
        variable=site.base if site.member else site.expr, field=f".{site.member}" if site.member else "")
    note = f"{site.expr} ({site.file}:{site.line}) zero-initialised: a constructor gives it {site.macro}"
    if not header:
        return text + c, note
    m = re.search(rf"\bstatic\b[^;{{}}]*\b(?:rcl|pthread)_mutex_t\s+{re.escape(site.expr)}\s*;", code_only(text))
    if m is None:
        return text, f"{site.expr} ({site.file}:{site.line}) zero-initialised: its definition was not found again, anonymous at run time"
    return text[: m.end()] + c.rstrip("\n") + text[m.end() :], note


def _define_name(code: str, at: int) -> str:
    """The macro name when offset at lies in a #define directive, else ''."""
    begin = code.rfind("\n", 0, at) + 1
    while begin > 1 and code[begin - 2] == "\\":
        begin = code.rfind("\n", 0, begin - 1) + 1
    m = re.match(r"[ \t]*#[ \t]*define[ \t]+(\w+)", code[begin:])
    return m.group(1) if m else ""


def add_include(text: str, header: str) -> str:
    """text with `#include "header"` after its last <pthread.h> include (else its first include,
    else at the top), among those no #if makes conditional; unchanged when it includes it already.  A #line directive after it keeps
    the following lines' numbers (__LINE__, assert messages, compiler diagnostics)."""
    line = f'#include "{header}"'
    if re.search(r'^[ \t]*#[ \t]*include[ \t]*"' + re.escape(header) + '"', text, re.M):
        return text
    # an include under #if is compiled in that configuration only (nng's `#ifdef _WIN32 #include
    # <io.h>` came first): the anchor is one every configuration compiles, else the top
    data = text.encode(errors="surrogateescape")
    def unconditional(m: re.Match) -> bool:
        return not guards_at(data, len(text[: m.start()].encode(errors="surrogateescape")))
    anchor = None
    for anchor in filter(unconditional, _PTHREAD_INCLUDE.finditer(text)):
        pass
    if anchor is None:
        anchor = next(filter(unconditional, _ANY_INCLUDE.finditer(text)), None)
    if anchor is None:
        # every include is conditional: before the #if block holding the first one, after what
        # precedes it (`#define _GNU_SOURCE` must stay before any system header)
        first = _ANY_INCLUDE.search(text)
        at = _opening_of_outer_conditional(text, first.start()) if first else 0
        return f"{text[:at]}{line}\n#line {text.count(chr(10), 0, at) + 1}\n{text[at:]}"
    next_line = text.count("\n", 0, anchor.end()) + 2
    return f"{text[: anchor.end()]}\n{line}\n#line {next_line}{text[anchor.end():]}"


_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b(.*)$", re.M)


def _opening_of_outer_conditional(text: str, offset: int) -> int:
    """The start of the line opening the outermost #if block open at offset, an include guard
    aside (`#ifndef X` followed by `#define X`: inside it is where the include belongs); offset's
    own line start when none is open."""
    stack: list[int] = []
    code = code_only(text)
    for m in _CONDITIONAL.finditer(code, 0, offset):
        if m.group(1) == "endif":
            if stack:
                stack.pop()
            continue
        guard = m.group(1) == "ifndef" and re.match(r"[ \t]*#[ \t]*define[ \t]+" + re.escape(m.group(2).strip()) + r"\b",
                                                     code[m.end() + 1 :]) is not None
        stack.append(-1 if guard else m.start())
    opened = [at for at in stack if at >= 0]
    return opened[0] if opened else text.rfind("\n", 0, offset) + 1
