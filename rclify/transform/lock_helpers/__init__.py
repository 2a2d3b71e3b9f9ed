"""Lock helpers: functions of the program that create a lock for their caller, and their calls.

A lock created through a helper (libuv's `uv_mutex_init(&loop->wq_mutex)`, whose body calls
`pthread_mutex_init(mutex, NULL)`; an allocator `l = new_lock(0)` that mallocs a struct and
initialises its mutex) belongs to the helper's *caller*: each call is a lock of its own, with

  * its own lock_config.h entry (lock_table.py: kind 'helper_call', id 'file.c:' + the lock's
    expression at the call, as for a pthread_mutex_init there: `src/unix/loop.c:loop->wq_mutex`,
    `main.c:c->big->m` for `c->big = new_lock(0)`),
  * its configuration applied at run time: the call is wrapped in RCL_LOCK_SITE (rclify.h), so
    the locks the helper initialises during that call take the call site's configuration instead
    of the helper's own (wrap_calls(), run by rewrite_api.py),
  * its own name in a preload profile: rclify/profiling/preload_records.py walks past the frames
    of helpers, found with the same inference, to the call.

A function defined in the tree is a helper when
  * every lock it initialises (a pthread_mutex_init call, or a call of another helper) hangs from
    a parameter (`m`, `&p->lock`, `&p->locks[i]`) or from a pointer local it returns
    (`l = malloc(..); pthread_mutex_init(&l->m, ..); return l;`), and
  * it does nothing else than set that up: every function it calls allocates or clears memory,
    sets up mutex or condvar attributes or a condvar, reports a failure (abort, assert, perror,
    fprintf, exit, ...), is another helper, is a function-like macro of the tree calling only
    those, or is a function of the program that can neither create nor take a lock and is not
    handed the lock's object (pigz's my_malloc() and fail(); see _helper_of).
So libuv's `uv_loop_init(loop)`, which initialises loop->wq_mutex among much else, is not a
helper: the lock it creates is named where it calls uv_mutex_init.  A helper's own init sites keep
their entries: the configuration of the locks it creates where no call site has an entry (a call
through a function pointer, from a C++ file, from code extraction moved).

Read from the text (comments and strings blanked, directives blanked, so both branches of an #if
are seen, except where the branches open or close braces: then the first, see
preprocessor.one_branch_where_unbalanced; a transformed file's conditional call sites keep the
region as written under #else): it works on files libclang or spatch cannot parse, on transformed
files, and on the sources a profiled binary was built from.  Calls inside #define bodies and macro
helpers are not read (one lock per macro body, as before).

A function-like macro whose whole body is one call of a helper with the macro's parameters and
constants for arguments (pigz's `#define new_lock(a) new_lock_(a, __FILE__, __LINE__)`), or of
another such macro, is a macro alias of the helper (aliases()): each use of it is a call of the
helper (HelperCall.via names the macro), with its entry, wrapped at the use and found by the
profiler at the use's line.

A function-like macro of the tree whose whole body is one pthread_mutex_init of a parameter (zstd's
`#define ZSTD_pthread_mutex_init(a, b) pthread_mutex_init((a), (b))`, `#define LOCK_INIT(l)
pthread_mutex_init(&(l)->mu, NULL)`), or the truth of its result (libmicrohttpd's
`#define MHD_mutex_init_(pmutex) (! (pthread_mutex_init ((pmutex), NULL)))`) is an *init macro*
(init_macros()): a helper of its own whose init site is the one in its body; each use is a call of
it, with an entry of its own, wrapped at the use like a function helper's call, and found by the
preload profiler at the use's line (the init's frame line, there being no frame of the macro's).  Where a function of the same name is
defined too (a debug build's alternative under #if), a call reaches the function when that is a
helper (and then names the macro's init site beside the function's, _with_macro_inits()), else
the macro.
"""

import re
from dataclasses import dataclass, field

from rclify.ctext.preprocessor import defines, directive_lines, one_branch_where_unbalanced
from rclify.ctext.tokens import Token, balanced, call_arguments, code_only, matching_bracket, tokenize, tokens_between
from rclify.ctext.languages import is_cxx, is_header
from rclify.transform import init_aliases

INIT = "pthread_mutex_init"

# What a helper may call besides the init: memory, attributes and condvars, failure reports.
_ALLOWED = {
    "malloc", "calloc", "realloc", "reallocarray", "aligned_alloc", "posix_memalign", "memalign", "valloc",
    "free", "memset", "memcpy", "bzero", "explicit_bzero", "strdup", "strndup", "strlen", "offsetof",
    "pthread_cond_init", "pthread_cond_destroy", "pthread_mutex_destroy",
    "abort", "exit", "_exit", "assert", "__assert_fail", "__assert_rtn", "__assert", "perror", "strerror",
    "fprintf", "printf", "fputs", "puts", "err", "errx", "warn", "warnx", "syslog",
}
_ALLOWED_PREFIXES = ("pthread_mutexattr_", "pthread_condattr_", "__builtin_")
_NOT_CALLS = {
    "if", "while", "for", "switch", "return", "sizeof", "_Alignof", "alignof", "__alignof__", "typeof",
    "__typeof__", "__typeof", "_Generic", "defined", "__attribute__", "__attribute", "__extension__",
    "__asm__", "asm", "case", "do", "else", "_Static_assert", "static_assert", "__builtin_offsetof",
}
_MAX_MACRO_DEPTH = 6
# what a function of the program a helper calls must not reach (besides the helpers)
_LOCK_API = ("pthread_mutex_", "pthread_rwlock_", "pthread_spin_", "pthread_cond_wait", "pthread_cond_timedwait",
             "pthread_cond_clockwait", "mtx_", "cnd_wait", "cnd_timedwait")
_PATH = re.compile(r"(?:(?:->|\.)[A-Za-z_]\w*(?:\[\])*)+")


@dataclass(frozen=True)
class Function:
    """A function definition read from a file's text."""

    file: str
    name: str
    line: int
    params: tuple[str, ...]
    returns_void: bool
    body_start: int  # offset of its `{`
    body_end: int  # offset just past its `}`
    static: bool = False


@dataclass
class HelperLock:
    """One lock a helper creates: the parameter it hangs from (-1: the pointer the helper
    returns), the path from what that points to ('' when it is the mutex pointer itself), and the
    pthread_mutex_init calls that initialise it ((file, line), through nested helpers too)."""

    param: int
    path: str
    inits: list[tuple[str, int]] = field(default_factory=list)
    init_ids: list[str] = field(default_factory=list)  # their lock ids (set by link())

    def describe(self, helper: "Helper") -> str:
        base = "its result" if self.param < 0 else f"parameter {helper.params[self.param]}"
        if self.path == "&":
            return f"the object {base} names"
        return f"{base}{self.path}" if self.path else base


@dataclass(frozen=True)
class MacroAlias:
    """A function-like macro of the tree whose whole body is one call of a helper (pigz's yarn.h:
    `#define new_lock(a) new_lock_(a, __FILE__, __LINE__)`), possibly through other such macros:
    each use of it is a call of the helper."""

    name: str
    file: str
    line: int
    params: tuple[str, ...]
    helper: str  # the helper function it calls
    args: tuple[str, ...]  # the helper's arguments: one of params, or a constant (__FILE__, 0, ...)

    def helper_args(self, written: list[str] | tuple[str, ...]) -> tuple[str, ...] | None:
        """The helper's arguments for a use of the macro with the arguments written; None when
        they do not fit its parameters."""
        written = [a for a in written if a.strip()] if not self.params else list(written)
        if len(written) != len(self.params):
            return None
        mapping = dict(zip(self.params, (a.strip() for a in written)))
        return tuple(mapping.get(a, a) for a in self.args)


@dataclass
class Helper:
    name: str
    file: str
    line: int
    params: tuple[str, ...]
    returns_void: bool
    locks: list[HelperLock]
    aliases: dict[str, MacroAlias] = field(default_factory=dict)  # macros of the tree calling it
    macro: bool = False  # an init macro (init_macros()), not a function

    @property
    def kind(self) -> str:
        return "the macro " if self.macro else ""


@dataclass
class HelperCall:
    """One call of a helper in the tree's text."""

    file: str
    line: int
    column: int
    function: str  # the enclosing function ('' at file scope)
    helper: Helper
    args: tuple[str, ...]
    target: str  # what the result is assigned to ('' when it is not)
    internal: bool  # inside a helper, creating that helper's own lock: not a lock of its own
    via: str = ""  # the macro called (a MacroAlias of the helper), '' for a call of the helper itself
    written: tuple[str, ...] = ()  # that macro's arguments as written (args: the helper's)

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        """How the call is found again in a rewritten text: what is called (the helper, or the
        macro) and its arguments as written."""
        return self.via or self.helper.name, tuple(re.sub(r"\s+", "", a) for a in (self.written if self.via else self.args))

    @property
    def called(self) -> str:
        """The call, for reports: `uv_mutex_init() call`, `new_lock() call (a macro for new_lock_())`."""
        return f"{self.via}() call (a macro for {self.helper.name}())" if self.via else f"{self.helper.name}() call"

    def lock_expression(self, lock: HelperLock) -> str:
        """A pointer to the mutex this call creates for lock, in the caller's terms."""
        if lock.param >= 0:
            return pointer_to(self.args[lock.param], lock.path) if lock.param < len(self.args) else ""
        if self.target:
            return pointer_to(self.target, lock.path)
        return f"{self.via or self.helper.name}(){lock.path}"


@dataclass(frozen=True, eq=False)
class CallLock:
    """One lock one call creates: what a lock_config.h entry of kind 'helper_call' stands for."""

    call: HelperCall
    lock: HelperLock
    expr: str  # lock_expression(lock)

    # where it is, as for a discovered pthread_mutex_init site (lock_table.py numbers them together)
    file = property(lambda self: self.call.file)
    line = property(lambda self: self.call.line)
    column = property(lambda self: self.call.column)
    function = property(lambda self: self.call.function)


@dataclass
class Helpers:
    helpers: dict[str, Helper] = field(default_factory=dict)  # by name (of several, the first defined)
    calls: list[HelperCall] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    by_file: dict[tuple[str, str], Helper] = field(default_factory=dict)  # (file, name) -> every helper

    def init_lines(self) -> set[tuple[str, int]]:
        """(file, line) of the pthread_mutex_init calls inside helpers."""
        return {at for h in self.by_file.values() for lock in h.locks for at in lock.inits}

    def call_locks(self) -> list[CallLock]:
        """Every lock the tree's calls of helpers create: calls in C files (not inside helpers).
        Calls in headers and C++ files keep the helper's entry: RCL_LOCK_SITE is C only, and a
        header may be compiled as C++."""
        return [CallLock(c, lock, expr) for c in self.calls if not c.internal and not is_cxx(c.file)
                and not is_header(c.file) for lock in c.helper.locks if (expr := c.lock_expression(lock))]


# ---- the text: functions, macros, calls -------------------------------------------------------------


def _code(text: str) -> str:
    """text with comments, strings and preprocessor directives blanked, offsets kept; of an #if
    group whose branches open or close braces, only the first branch (functions() counts them)."""
    lines = one_branch_where_unbalanced(code_only(text)).split("\n")
    for first, last in directive_lines(text):
        for i in range(first, last + 1):
            lines[i] = " " * len(lines[i])
    return "\n".join(lines)


def macros(text: str) -> dict[str, str]:
    """The function-like macros of a text: {name: body} (comments blanked; the last of several)."""
    return {d.name: d.body for d in defines(text) if d.params is not None}


def _opening(tokens: list[Token], close: int) -> int:
    """Index of the `(` matching the `)` at close, or -1."""
    depth = 0
    for j in range(close, -1, -1):
        if tokens[j].text == ")":
            depth += 1
        elif tokens[j].text == "(":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _param_name(tokens: list[Token]) -> str:
    """The name a parameter declaration declares ('' for `void` or an unnamed one)."""
    flat, depth = [], 0
    for t in tokens:
        depth += t.text == "["
        if depth == 0:
            flat.append(t)
        depth -= t.text == "]"
    for i, t in enumerate(flat):  # a function pointer: void (*cb)(int)
        if t.text == "(" and i + 2 < len(flat) and flat[i + 1].text == "*" and flat[i + 2].kind == "ident":
            return flat[i + 2].text
    idents = [t.text for t in flat if t.kind == "ident"]
    return idents[-1] if len(idents) > 1 else ""


def functions(file: str, code: str) -> list[Function]:
    """The function definitions of a file's code (comments, strings and directives blanked)."""
    tokens = tokenize(code)
    out, depth, boundary = [], 0, -1
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.text == "{" and depth == 0:
            close = i - 1
            while close >= 0 and tokens[close].text == ")":  # past __attribute__((...)) groups
                open_ = _opening(tokens, close)
                if open_ > 0 and tokens[open_ - 1].text in ("__attribute__", "__attribute"):
                    close = open_ - 2
                    continue
                break
            end = matching_bracket(tokens, i)
            if end < 0:
                break
            open_ = _opening(tokens, close) if close >= 0 and tokens[close].text == ")" else -1
            if open_ > 0 and tokens[open_ - 1].kind == "ident" and tokens[open_ - 1].text not in _NOT_CALLS:
                name = tokens[open_ - 1]
                params, start = [], open_ + 1
                for j in range(open_ + 1, close + 1):
                    if (tokens[j].text == "," and _depth_between(tokens, open_, j) == 1) or j == close:
                        params.append(_param_name(tokens[start:j]))
                        start = j + 1
                head = [x.text for x in tokens[boundary + 1 : open_ - 1]]
                out.append(Function(file, name.text, code.count("\n", 0, name.start) + 1,
                                    tuple(p for p in params if p), "void" in head and "*" not in head,
                                    t.start, tokens[end].end, "static" in head))
                i, boundary = end + 1, end
                continue
            depth += 1
        elif t.text == "{":
            depth += 1
        elif t.text == "}":
            depth -= 1
            if depth == 0:
                boundary = i
        elif t.text == ";" and depth == 0:
            boundary = i
        i += 1
    return out


def _depth_between(tokens: list[Token], open_: int, j: int) -> int:
    depth = 0
    for k in range(open_, j):
        depth += tokens[k].text in "([{"
        depth -= tokens[k].text in ")]}"
    return depth


def _calls(code: str, start: int, end: int):
    """(name, offset of the name, offset of its `(`) of each identifier called in code[start:end]."""
    tokens = tokens_between(code, start, end)
    for i, t in enumerate(tokens[:-1]):
        if t.kind == "ident" and tokens[i + 1].text == "(" and t.text not in _NOT_CALLS:
            yield t.text, t.start, tokens[i + 1].start


def _is_call(code: str, at: int) -> bool:
    """Is the identifier at offset `at` called (not declared: `int f(`, `T *f(`), with its
    parenthesis following?"""
    before = code[:at].rstrip()
    if not before:
        return False
    previous = re.search(r"(\w+|\S)$", before).group(1)
    if previous in ("return", "else", "do", "case"):
        return True
    return not (previous == "*" or re.fullmatch(r"\w+", previous))


def _target(code: str, at: int, fn: Function | None) -> str:
    """What the value of the call at offset `at` is assigned to: `x` in `x = f()` and in
    `T *x = f()`, `c->lock` in `c->lock = (T *)f()`, `tbl[i]`; '' otherwise."""
    tokens = tokenize(code[fn.body_start + 1 if fn else 0 : at])
    i = len(tokens) - 1
    while i >= 0 and tokens[i].text == ")":  # a cast: (T *)
        open_ = _opening(tokens, i)
        inside = tokens[open_ + 1 : i]
        if open_ < 0 or not inside or any(x.kind != "ident" and x.text != "*" for x in inside):
            return ""
        i = open_ - 1
    if i < 1 or tokens[i].text != "=":
        return ""
    end = i - 1
    j = end  # back over a postfix expression: names, members, subscripts
    while j >= 0:
        if tokens[j].text == "]":
            depth = 0
            while j >= 0:
                depth += (tokens[j].text == "]") - (tokens[j].text == "[")
                if depth == 0:
                    break
                j -= 1
            j -= 1
        elif tokens[j].kind == "ident":
            if j >= 1 and tokens[j - 1].text in (".", "->"):
                j -= 2
            else:
                break
        else:
            return ""
    if j < 0 or tokens[j].kind != "ident":
        return ""
    text = code[(fn.body_start + 1 if fn else 0) + tokens[j].start : (fn.body_start + 1 if fn else 0) + tokens[end].end]
    if j >= 1 and tokens[j - 1].text == "*" and (j < 2 or tokens[j - 2].kind != "ident"):
        text = "*" + text  # *out = f()
    return re.sub(r"\s+", "", text)


def _line_col(code: str, at: int) -> tuple[int, int]:
    line = code.count("\n", 0, at) + 1
    return line, at - (code.rfind("\n", 0, at) + 1)


# ---- lock expressions ------------------------------------------------------------------------------


def _strip(expr: str) -> str:
    text = re.sub(r"\s+", "", expr)
    changed = True
    while changed:
        before = text
        text = re.sub(r"^\((?:const)?(?:struct)?[A-Za-z_]\w*\*\)", "", text)  # a cast to a pointer type
        if text.startswith("(") and text.endswith(")") and balanced(text[1:-1]):
            text = text[1:-1]
        changed = text != before
    return text


def _blank_subscripts(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        if ch == "[":
            out.append("[" if depth == 0 else "")
            depth += 1
        elif ch == "]":
            depth -= 1
            out.append("]" if depth == 0 else "")
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def root(expr: str) -> tuple[str, str] | None:
    """(variable, path) of a mutex pointer expression that hangs from a pointer variable:
    'm' -> ('m', ''), '&l->m' -> ('l', '->m'), '&(p)->locks[i]' -> ('p', '->locks[]'); None for
    anything else (the address of a variable, of a field of a struct variable)."""
    text = _strip(expr)
    if re.fullmatch(r"[A-Za-z_]\w*", text):
        return text, ""
    if not text.startswith("&"):
        return None
    inner = _blank_subscripts(_strip(text[1:]))
    m = re.match(r"\(?([A-Za-z_]\w*)\)?(->.*)$", inner)
    if m is None or not _PATH.fullmatch(m.group(2)):
        return None
    return m.group(1), m.group(2)


def pointer_to(base: str, path: str) -> str:
    """A pointer to what path names in the object base points to: ('&c->big', '->m') ->
    '&c->big.m', ('l', '->m') -> '&l->m', ('m', '') -> 'm'."""
    b = re.sub(r"\s+", "", base)
    if not path:
        return b
    simple = r"[A-Za-z_][\w.\->\[\]]*"
    if path == "&":  # an init macro's `pthread_mutex_init(&(m), ..)`: base names the mutex itself
        return f"&{b}" if re.fullmatch(simple, b) else f"&({b})"
    if b.startswith("&") and re.fullmatch(simple, b[1:]):
        return f"&{b[1:]}.{path[2:]}"
    if re.fullmatch(simple, b):
        return f"&{b}{path}"
    return f"&({b}){path}"


# ---- inference --------------------------------------------------------------------------------------


@dataclass
class _Source:
    file: str
    code: str  # comments, strings and directives blanked
    functions: list[Function]


def _sources(texts: dict[str, str]) -> list[_Source]:
    out = []
    for file, text in sorted(texts.items()):
        code = _code(text)
        out.append(_Source(file, code, functions(file, code) if "(" in code else []))
    return out


class _Names:
    """Which definition a call in a file reaches: a static function of that file (or of a header),
    else the function of that name defined non-static elsewhere; of platform alternatives
    (libuv's src/unix/thread.c and src/win/thread.c both define uv_mutex_init) the one that is a
    helper."""

    def __init__(self, sources: list[_Source], tree_macros: dict[str, str] | None = None):
        self.defs: dict[str, list[tuple[Function, bool]]] = {}  # name -> (definition, static)
        self.helper: dict[tuple[str, str], Helper] = {}  # (file, name) -> the helper it defines
        self.code = {src.file: src.code for src in sources}
        self.tree_macros = tree_macros or {}
        self.aliases: dict[str, MacroAlias] = {}  # by macro name (see aliases())
        self.init_macros: dict[str, Helper] = {}  # by macro name (see init_macros())
        self._lockless: dict[tuple[str, str], bool] = {}
        for src in sources:
            for fn in src.functions:
                self.defs.setdefault(fn.name, []).append((fn, fn.static))

    def helper_args(self, name: str, args: list[str]) -> tuple[str, ...] | None:
        """The arguments the helper gets from a call of name (a helper, or a macro alias of one)."""
        alias = self.aliases.get(name) if not self.defs.get(name) else None
        return alias.helper_args(args) if alias is not None else tuple(args)

    def definition(self, name: str, file: str) -> Function | None:
        """The function a call of name in file reaches (as lookup() does for helpers)."""
        defs = self.defs.get(name)
        if not defs:
            return None
        own = [fn for fn, static in defs if static and (fn.file == file or is_header(fn.file))]
        return own[0] if own else next((fn for fn, static in defs if not static), None)

    def lockless(self, name: str, file: str) -> bool:
        """Is name, called in file, a function of the tree that can neither create nor take a
        lock: nothing it calls, through the tree's functions and function-like macros, is the
        pthread lock API (mutexes, condvar waits, rwlocks, spinlocks) or a lock helper?  Calls it
        makes through function pointers and of library functions are not followed (see
        _helper_of)."""
        fn = self.definition(name, file)
        if fn is None:
            return False
        key = (fn.file, fn.name)
        if key not in self._lockless:
            self._lockless[key] = True  # a cycle of calls: decided by its other calls
            code = self.code[fn.file]
            self._lockless[key] = all(self._lockless_call(n, fn.file, 0)
                                      for n, _, _ in _calls(code, fn.body_start, fn.body_end))
        return self._lockless[key]

    def _lockless_call(self, name: str, file: str, depth: int) -> bool:
        if name == INIT or name.startswith(_LOCK_API) or self.lookup(name, file):
            return False
        if self.defs.get(name):
            return self.lockless(name, file)
        body = self.tree_macros.get(name)
        if body is not None and depth <= _MAX_MACRO_DEPTH:
            return all(self._lockless_call(n, file, depth + 1) for n, _, _ in _calls(body, 0, len(body)))
        return True  # a library function (or a function pointer: see _helper_of)

    def lookup(self, name: str, file: str) -> Helper | None:
        """The helper a call of name in file reaches: a function, or through a macro alias."""
        defs = self.defs.get(name)
        if not defs:
            alias = self.aliases.get(name)
            if alias is not None and alias.helper != name:
                return self.lookup(alias.helper, file)
            return self.init_macros.get(name)
        own = [fn for fn, static in defs if static and (fn.file == file or is_header(fn.file))]
        if own:
            found = self.helper.get((own[0].file, name))
        else:
            found = next((h for fn, static in defs if not static and (h := self.helper.get((fn.file, name)))), None)
        return found or self.init_macros.get(name)  # a function that is no helper: the macro, if any


def _allowed(name: str, lookup, tree_macros: dict[str, str], depth: int = 0) -> bool:
    if name in _ALLOWED or name.startswith(_ALLOWED_PREFIXES) or name == INIT or lookup(name):
        return True
    body = tree_macros.get(name)
    if body is None or depth > _MAX_MACRO_DEPTH:
        return False
    return all(_allowed(n, lookup, tree_macros, depth + 1) for n, _, _ in _calls(body, 0, len(body)))


def _returned_local(code: str, fn: Function, name: str) -> bool:
    """Is name a pointer local of fn that fn returns (and fn returns nothing else but NULL/0)?"""
    body = code[fn.body_start : fn.body_end]
    if not re.search(rf"(?:\w|\*)\s*\*\s*{re.escape(name)}\s*(?:=|;|,)", body):
        return False  # not declared here as a pointer: a global, or not a pointer
    returns = [_strip(r) for r in re.findall(r"\breturn\b([^;]*);", body)]
    return name in returns and all(r in (name, "NULL", "0", "(void*)0", "") for r in returns)


def _returned_call(code: str, at: int, fn: Function, is_helper) -> bool:
    """Is the call at offset `at` returned as it is (`return new_lock(0);`, `return (T *) f(..);`),
    and does fn return nothing else than such calls of helpers, NULL and 0?"""
    before = code[fn.body_start + 1 : at]
    statement = re.split(r"[;{}]", before)[-1]
    if not re.fullmatch(r"\s*return\s*(?:\(\s*(?:const\s+)?(?:struct\s+)?[A-Za-z_]\w*\s*\*\s*\)\s*)?", statement):
        return False
    body = code[fn.body_start : fn.body_end]
    for r in re.findall(r"\breturn\b([^;]*);", body):
        value = _strip(r)
        called = re.match(r"([A-Za-z_]\w*)\(", value)
        if value not in ("NULL", "0", "(void*)0", "") and not (called and is_helper(called.group(1))):
            return False
    return True


def _helper_of(src: _Source, fn: Function, names: _Names, tree_macros: dict[str, str]) -> Helper | None:
    """fn read as a helper, given the helpers known so far; None when it is not one."""
    code = src.code
    lookup = lambda name: names.lookup(name, src.file)  # noqa: E731
    calls = list(_calls(code, fn.body_start, fn.body_end))
    if not any(name == INIT or lookup(name) for name, _, _ in calls):
        return None
    # A call of another function of the program (pigz's new_lock_() allocates through its own
    # my_malloc() and reports errors through its own fail()) is allowed when that function can
    # neither create nor take a lock (names.lockless(): through the tree's call graph it reaches
    # no pthread lock API and no helper) and is not handed the object the lock lives in (below:
    # uv_loop_init(loop) hands `loop` to uv_async_init() and the rest of the loop's set-up, and
    # stays no helper).  Calls it makes through function pointers (pigz's my_malloc_f, the
    # program's yarn_abort) are not followed: at run time RCL_LOCK_SITE redirects only the inits
    # at the helper's own init sites, so a lock such a call takes or creates elsewhere keeps its
    # own configuration; only a lock it created through the same helper again would take the
    # outer call's (a configuration of the program all the same).
    program = {name for name, _, _ in calls
               if not _allowed(name, lookup, tree_macros) and names.lockless(name, src.file)}
    if not all(_allowed(name, lookup, tree_macros) or name in program for name, _, _ in calls):
        return None
    locks: dict[tuple[int, str], HelperLock] = {}
    for name, at, open_at in calls:
        callee = lookup(name) if name != INIT else None
        if name != INIT and callee is None:
            continue
        found = call_arguments(code, open_at)
        if found is None:
            return None
        args = found[0]
        if callee is None:
            created = [(args[0] if args else "", [(src.file, _line_col(code, at)[0])])]
        else:
            helper_args = names.helper_args(name, args)
            if helper_args is None:
                return None
            call = HelperCall(src.file, 0, 0, fn.name, callee, helper_args, _target(code, at, fn), False)
            returned = _returned_call(code, at, fn, lambda n: names.lookup(n, src.file) is not None)
            created = [((-1, lock.path) if lock.param < 0 and returned else call.lock_expression(lock), lock.inits)
                       for lock in callee.locks]
        for expr, inits in created:
            if isinstance(expr, tuple):  # `return new_thing(..)`: what it returns, fn returns
                param, path = expr
            elif (found_root := root(expr)) is None:
                return None
            elif found_root[0] in fn.params:
                param, path = fn.params.index(found_root[0]), found_root[1]
            elif _returned_local(code, fn, found_root[0]):
                param, path = -1, found_root[1]
            else:
                return None
            lock = locks.setdefault((param, path), HelperLock(param, path))
            lock.inits += [i for i in inits if i not in lock.inits]
    if program:  # the program's functions it calls are not handed what the locks hang from
        roots = {fn.params[lock.param] if lock.param >= 0 else returned for lock in locks.values()
                 for returned in [next((r for r in re.findall(r"\breturn\b\s*\(?\s*([A-Za-z_]\w*)", code[fn.body_start:fn.body_end])
                                         if r not in ("NULL", "0")), "")]}
        for name, _, open_at in calls:
            found = call_arguments(code, open_at) if name in program else None
            if found and any(set(re.findall(r"[A-Za-z_]\w*", a)) & roots for a in found[0]):
                return None
    return Helper(fn.name, src.file, fn.line, fn.params, fn.returns_void, list(locks.values()))


# what a macro alias may pass to its helper besides its parameters (strings are blanked: "  ")
_CONSTANT = re.compile(r"""__FILE__|__LINE__|__func__|__FUNCTION__|__PRETTY_FUNCTION__|NULL|[-+]?\s*\d\w*|"[^"]*"|'[^']*'""")


def aliases(definitions: dict[str, list[tuple[str, int, tuple[str, ...], str]]], is_helper,
            functions_defined=frozenset(), macro_helpers=frozenset()) -> dict[str, MacroAlias]:
    """The macro aliases of helpers among the tree's function-like macros (definitions: name ->
    (file, line, parameters, body) of each of its definitions; is_helper(name): a helper function
    of that name exists; macro_helpers: the init macros, helpers defined as macros).  A macro is
    one when its whole body is one call of a helper, or of another alias (up to _MAX_MACRO_DEPTH),
    whose arguments are its parameters and constants; one defined twice differently, or whose
    name is also a function of the tree, is none."""
    shapes: dict[str, tuple[str, int, tuple[str, ...], str, tuple[str, ...]]] = {}
    for name, defs in definitions.items():
        if name in functions_defined or len({(params, re.sub(r"\s+", "", body)) for _, _, params, body in defs}) != 1:
            continue
        file, line, params, body = defs[0]
        if any(p == "..." or not re.fullmatch(r"[A-Za-z_]\w*", p) for p in params):
            continue
        called = _single_call(body)
        if called is None:
            continue
        callee, args = called
        if all(a in params or _CONSTANT.fullmatch(a) for a in args):
            shapes[name] = (file, line, params, callee, args)
    out: dict[str, MacroAlias] = {}
    for _ in range(_MAX_MACRO_DEPTH + 1):
        changed = False
        for name, (file, line, params, callee, args) in shapes.items():
            if name in out or callee == name:
                continue
            if is_helper(callee) and (callee not in definitions or callee in macro_helpers):
                out[name] = MacroAlias(name, file, line, params, callee, args)
            elif callee in out and (inner := out[callee].helper_args(args)) is not None:
                out[name] = MacroAlias(name, file, line, params, out[callee].helper, inner)
            else:
                continue
            changed = True
        if not changed:
            break
    return out


def init_macros(definitions: dict[str, list[tuple[str, int, tuple[str, ...], str]]],
                texts: dict[str, str], functions_defined=frozenset()) -> dict[str, Helper]:
    """The init macros among the tree's function-like macros (see the module): a macro whose whole
    body is `pthread_mutex_init(L, attr)`, or its result negated or compared with 0
    (libmicrohttpd's `(! (pthread_mutex_init ((pmutex), NULL)))`), with L one of its parameters
    (`m`), its address (`&(m)`) or a field under it (`&(p)->lock`), alike in every #if branch
    that defines it so; a branch defining it otherwise (another platform's, or one without
    threads) calls no pthread function nor function of the tree."""
    out: dict[str, Helper] = {}
    statement_macros = frozenset(name for name, defs in definitions.items() if all(_is_statement(d[3]) for d in defs))
    for name, defs in definitions.items():
        inits = [d for d in defs if _init_call(d[3], statement_macros) is not None]
        if len({(params, re.sub(r"\s+", "", body)) for _, _, params, body in inits}) != 1:
            continue
        # the other definitions are another platform's (zstd's InitializeCriticalSection): they
        # may not reach a pthread mutex or a function of the tree (a helper of another shape)
        if any(not re.fullmatch(r"[A-Za-z_]\w*", n) or n.startswith("pthread_") or n in functions_defined
               for d in defs if d not in inits for n, _, _ in _calls(d[3], 0, len(d[3]))):
            continue
        file, line, params, body = inits[0]
        args, has_value = _init_call(body, statement_macros)
        if len(args) != 2 or any(p == "..." or not re.fullmatch(r"[A-Za-z_]\w*", p) for p in params):
            continue
        lock = _strip(args[0])
        if lock.startswith("&") and _strip(lock[1:]) in params:
            param, path = params.index(_strip(lock[1:])), "&"
        elif (found := root(lock)) is not None and found[0] in params:
            param, path = params.index(found[0]), found[1]
        else:
            continue
        # every definition's init site: two headers may define it alike (libmicrohttpd's src/lib
        # and src/microhttpd each have an mhd_locks.h), a use names the one its file includes
        at = list(dict.fromkeys((f, _init_line(texts.get(f, ""), n)) for f, n, _, _ in inits))
        out[name] = Helper(name, file, line, params, not has_value, [HelperLock(param, path, at)], macro=True)
    return out


# what an init macro's body may hold besides its one pthread_mutex_init call
_INIT_RESULT_TOKENS = {"(", ")", "!", "==", "!=", "0", "NULL"}


def _is_statement(body: str) -> bool:
    """Is a macro body a statement (`do { ... } while (0)`, `{ ... }`, `if (...) ...`)?"""
    first = tokenize(body)[:1]
    return bool(first) and first[0].text in ("do", "{", "if")


def _whole_call(body: str) -> bool:
    """Is the body one call, `NAME(...)` and nothing after it?"""
    tokens = tokenize(body)
    return len(tokens) > 2 and tokens[1].text == "(" and matching_bracket(tokens, 1) == len(tokens) - 1


def _init_call(body: str, statement_macros: frozenset[str] = frozenset()) -> tuple[tuple[str, ...], bool] | None:
    """(arguments, has a value) of the pthread_mutex_init call a macro body is: alone or with its
    result negated or compared with 0 (the macro's value is the init's result, or the truth of
    it), or cast to void (no value); or the one pthread_mutex_init among other calls that are no
    pthread mutex or condvar calls, in a statement or passed to a statement macro (statement_macros:
    the tree's macros whose bodies are statements) (no value); None for any other body."""
    calls = list(_calls(body, 0, len(body)))
    inits = [c for c in calls if c[0] == INIT]
    if len(inits) != 1 or any(name.startswith(("pthread_mutex", "pthread_cond")) and name != INIT
                              for name, _, _ in calls):
        return None
    found = call_arguments(body, inits[0][2])
    if found is None:
        return None
    if len(calls) > 1:
        # the init checked by a statement (`do { if (pthread_mutex_init(..) != 0) abort(); } while
        # (0)`) or by a statement macro it is passed to (`#define LOCK_INIT(l)
        # CHECK(pthread_mutex_init((l), NULL))`): one lock per use, a use being a statement
        head = tokenize(body)[:1]
        outer = calls[0][0] if head and head[0].text == calls[0][0] else ""
        if not (_is_statement(body) or outer in statement_macros and _whole_call(body)):
            return None  # an expression doing more with the result: `f(pthread_mutex_init(m, 0))`
        return tuple(_strip_parens(a) for a in found[0] if a.strip()), False
    rest = [t.text for t in tokenize(body[: calls[0][1]] + " " + body[found[1] :])]
    if not balanced("".join(rest)):
        return None
    args = tuple(_strip_parens(a) for a in found[0] if a.strip())
    if [x for x in rest if x not in ("(", ")")] == ["void"]:
        return args, False
    if any(x not in _INIT_RESULT_TOKENS for x in rest) or sum(x in ("==", "!=") for x in rest) > 1:
        return None
    return args, True


def _with_macro_inits(helper: Helper, macro: Helper | None) -> None:
    """A helper function that is also an init macro of the same name (its alternative under #if):
    when both create the same locks, the calls name the macro's init sites too, so a call's entry
    reaches its lock whichever of the two the build compiles.  (A function found to be a helper
    through this name before this function was knows the macro's init sites only.)"""
    if macro is None or sorted((l.param, l.path) for l in helper.locks) != [(l.param, l.path) for l in macro.locks]:
        return
    for lock in helper.locks:
        lock.inits += [at for at in macro.locks[0].inits if at not in lock.inits]


def _init_line(text: str, define_line: int) -> int:
    """The 1-based line of the pthread_mutex_init token in the #define starting at define_line (a
    body may continue on the next lines): the line the lock table's init site has."""
    lines, code = text.split("\n"), code_only(text).split("\n")
    i = define_line - 1
    while i < len(code):
        if re.search(rf"\b{INIT}\s*\(", code[i]):
            return i + 1
        if not lines[i].endswith("\\"):
            break
        i += 1
    return define_line


def _single_call(body: str) -> tuple[str, tuple[str, ...]] | None:
    """(name, arguments) when a macro body is one call (in parentheses or not), else None."""
    text = body.strip()
    while text.startswith("(") and text.endswith(")") and balanced(text[1:-1]):
        text = text[1:-1].strip()
    m = re.match(r"([A-Za-z_]\w*)\s*\(", text)
    found = call_arguments(text, m.end() - 1) if m else None
    if found is None or text[found[1]:].strip():
        return None
    args = tuple(_strip_parens(a) for a in found[0] if a.strip()) if found[0] != [""] else ()
    return m.group(1), args


def _strip_parens(arg: str) -> str:
    text = arg.strip()
    while text.startswith("(") and text.endswith(")") and balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def infer(texts: dict[str, str]) -> Helpers:
    """The lock helpers of a tree ({file: text}) and every call of them (see the module)."""
    sources = _sources(texts)
    tree_macros: dict[str, str] = {}
    definitions: dict[str, list[tuple[str, int, tuple[str, ...], str]]] = {}
    for src in sources:
        for d in defines(texts[src.file]):  # every #if branch's: a macro defined twice is no alias
            if d.params is not None:
                tree_macros[d.name] = d.body
                definitions.setdefault(d.name, []).append((src.file, d.line, d.params, d.body))
        for name, line, params, body in init_aliases.definitions(texts[src.file], src.file):
            tree_macros[name] = body  # `#define my_init pthread_mutex_init`: an init macro (init_aliases.py)
            definitions.setdefault(name, []).append((src.file, line, params, body))
    names = _Names(sources, tree_macros)
    names.init_macros = init_macros(definitions, texts, names.defs)
    for macro in names.init_macros.values():
        names.helper[(macro.file, macro.name)] = macro
    helper_names: set[str] = set(names.init_macros)
    changed = True
    while changed:  # a helper may create its lock through another one (or through a macro alias)
        changed = False
        names.aliases = aliases(definitions, helper_names.__contains__, names.defs, names.init_macros)
        for src in sources:
            for fn in src.functions:
                if (src.file, fn.name) in names.helper:
                    continue
                helper = _helper_of(src, fn, names, tree_macros)
                if helper is not None:
                    _with_macro_inits(helper, names.init_macros.get(fn.name))
                    names.helper[(src.file, fn.name)] = helper
                    helper_names.add(fn.name)
                    changed = True
    for helper in names.helper.values():
        helper.aliases = {a.name: a for a in names.aliases.values() if a.helper == helper.name}
    result = Helpers(by_file=dict(names.helper))
    result.helpers = {h.name: h for h in sorted(names.helper.values(), key=lambda h: (h.file, h.line), reverse=True)}
    if names.helper:
        result.calls = _call_sites(sources, names)
    return result


def _call_sites(sources: list[_Source], names: _Names) -> list[HelperCall]:
    called = {n for _, n in names.helper} | {a.name for a in names.aliases.values()}
    pattern = re.compile(r"\b(" + "|".join(sorted(re.escape(n) for n in called)) + r")\s*\(")
    out = []
    for src in sources:
        code = src.code
        for m in pattern.finditer(code):
            helper = names.lookup(m.group(1), src.file)
            found = call_arguments(code, m.end() - 1) if helper and _is_call(code, m.start()) else None
            args = names.helper_args(m.group(1), found[0]) if found is not None else None
            if args is None:
                continue
            fn = next((f for f in src.functions if f.body_start < m.start() < f.body_end), None)
            line, column = _line_col(code, m.start())
            via = m.group(1) if m.group(1) != helper.name else ""
            call = HelperCall(src.file, line, column, fn.name if fn else "", helper, args,
                              _target(code, m.start(), fn), False, via, tuple(found[0]) if via else ())
            # inside a helper, a call creates that helper's lock (every lock a helper creates is)
            call.internal = fn is not None and (src.file, fn.name) in names.helper
            out.append(call)
    return out


def call_at(text: str, file: str, line: int, helper: Helper, nth: int = 0) -> HelperCall | None:
    """The nth call of helper (or of one of its macro aliases) that spans the 1-based line of text
    (a file's source), or None: for a profiler that knows a call's line from the debug info (a
    call through a macro has the line of the macro's use)."""
    code = _code(text)
    called = "|".join(re.escape(n) for n in sorted({helper.name, *helper.aliases}))
    for m in re.finditer(rf"\b({called})\s*\(", code):
        found = call_arguments(code, m.end() - 1) if _is_call(code, m.start()) else None
        alias = helper.aliases.get(m.group(1)) if m.group(1) != helper.name else None
        args = (alias.helper_args(found[0]) if alias else tuple(found[0])) if found is not None else None
        if args is None:
            continue
        first, column = _line_col(code, m.start())
        if first <= line <= code.count("\n", 0, found[1]) + 1 and nth > 0:
            nth -= 1
        elif first <= line <= code.count("\n", 0, found[1]) + 1:
            fn = next((f for f in functions(file, code) if f.body_start < m.start() < f.body_end), None)
            return HelperCall(file, first, column, fn.name if fn else "", helper, args,
                              _target(code, m.start(), fn), False, alias.name if alias else "",
                              tuple(found[0]) if alias else ())
    return None


# ---- the lock table's ids -------------------------------------------------------------------------


def link(helpers: Helpers, sites: list) -> tuple[list, list[str]]:
    """After the lock table has numbered its sites: each helper lock gets the ids of its
    pthread_mutex_init calls, and each of those sites a line saying which calls it stands for.
    Returns the sites without the call sites whose helper lock has no init id (spatch did not read
    the helper's file: no configuration could reach it), and notes for the report."""
    ids: dict[tuple[str, int], list[str]] = {}
    for site in sites:
        for s in site.sites:
            if s.kind == "mutex_init":
                ids.setdefault((s.file, s.line), []).append(site.lock_id)
    for helper in helpers.by_file.values():
        for lock in helper.locks:
            lock.init_ids = sorted({i for at in lock.inits for i in ids.get(at, [])})
    calls: dict[int, int] = {}  # id(helper lock) -> calls with an entry
    for site in sites:
        for cl in site.helper_calls:
            calls[id(cl.lock)] = calls.get(id(cl.lock), 0) + 1
    created: dict[str, list[str]] = {}  # init id -> 'helper() (what)' for each helper lock it initialises
    total: dict[str, int] = {}  # init id -> calls with an entry of their own
    notes = list(helpers.notes)
    for helper in sorted(helpers.by_file.values(), key=lambda h: (h.file, h.line)):
        for lock in helper.locks:
            n = calls.get(id(lock), 0)
            for init in lock.init_ids:
                created.setdefault(init, []).append(f"{helper.kind}{helper.name}() ({lock.describe(helper)})")
                total[init] = total.get(init, 0) + n
            through = f", called through the macro{'s' if len(helper.aliases) > 1 else ''} " \
                f"{', '.join(a + '()' for a in sorted(helper.aliases))} too" if helper.aliases else ""
            notes.append(f"{helper.file}:{helper.line}: {helper.kind}{helper.name}() creates a lock for its caller "
                         f"({lock.describe(helper)}{through}): {n} call{'s' if n != 1 else ''} with an entry of "
                         f"{'their' if n != 1 else 'its'} own" + ("" if lock.init_ids else
                         "; its pthread_mutex_init was not read (spatch): they keep none"))
    for site in sites:
        if site.lock_id in created:
            n = total[site.lock_id]
            site.helper_init = True
            site.note = (f"the lock {' or '.join(created[site.lock_id])} creates where a call has no entry of its "
                         f"own ({n} call{'s have' if n != 1 else ' has'} one)")
    kept = [s for s in sites if s.kind != "helper_call" or all(cl.lock.init_ids for cl in s.helper_calls)]
    return kept, notes


def kept_call_sites(sites, kept_ids: set[str]) -> set[str]:
    """Ids of helper call sites whose helper's init sites all stay pthread mutexes
    (kept_posix.py): they get no configuration of their own either."""
    out = set()
    for site in sites:
        if site.kind == "helper_call" and all(i in kept_ids for cl in site.helper_calls for i in cl.lock.init_ids):
            out.add(site.lock_id)
    return out


# ---- the rewrite: wrapping the calls --------------------------------------------------------------


def wrap_calls(text: str, file: str, sites, kept_ids: set[str] = frozenset()) -> tuple[str, list[str]]:
    """text with each call of a helper that creates locks with lock_config.h entries (sites: the
    lock table's) wrapped in RCL_LOCK_SITE(call, RCL_SITE(init id, RCLIFY_LOCK_<call site>), ...).

    The calls are found again in text (extraction may have moved a call into the section's
    function, rclify_cs_<function>_<n>) by helper, arguments and function, in order; calls
    already wrapped are left alone (running it twice changes nothing).  Returns the new text and
    notes ('file:line: ...') for calls not found again."""
    if is_cxx(file) or is_header(file):
        return text, []
    wanted: dict[int, tuple[HelperCall, list[tuple[str, str]]]] = {}
    for site in sites:
        for cl in getattr(site, "helper_calls", []):
            if cl.call.file != file:
                continue
            entry = wanted.setdefault(id(cl.call), (cl.call, []))
            entry[1].extend(p for p in ((init, site.macro) for init in cl.lock.init_ids if init not in kept_ids)
                            if p not in entry[1])
    if not wanted:
        return text, []
    code = _code(text)
    defined = functions(file, code)
    names = re.compile(r"\b(" + "|".join(sorted({re.escape(c.via or c.helper.name) for c, _ in wanted.values()})) + r")\s*\(")
    pending = sorted(wanted.values(), key=lambda w: (w[0].line, w[0].column))
    edits = []
    for m in names.finditer(code):
        found = call_arguments(code, m.end() - 1) if _is_call(code, m.start()) else None
        if found is None:
            continue
        fn = next((f.name for f in defined if f.body_start < m.start() < f.body_end), "")
        key = (m.group(1), tuple(re.sub(r"\s+", "", a) for a in found[0]))
        match = next((w for w in pending if w[0].key == key and
                      (fn == w[0].function or fn.startswith(f"rclify_cs_{w[0].function}_"))), None)
        if match is None:
            continue
        pending.remove(match)
        call, pairs = match
        if re.search(r"\bRCL_LOCK_SITE(?:_VOID)?\s*\(\s*$", code[: m.start()]) or not pairs:
            continue  # wrapped already; or its locks have no init ids (left with the helper's entry)
        wrap = "RCL_LOCK_SITE_VOID" if call.helper.returns_void else "RCL_LOCK_SITE"
        sites_text = ", ".join(f'RCL_SITE("{init}", {macro})' for init, macro in pairs)
        edits.append((m.start(), found[1], f"{wrap}({text[m.start():found[1]]}, {sites_text})"))
    notes = [f"{file}:{call.line}: {call.called} not found again after extraction: its lock "
             f"keeps the configuration of the helper's own init site" for call, _ in pending]
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text, notes
