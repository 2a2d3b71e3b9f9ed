"""Function-like macros of the tree that stand for helpers: macro aliases of a helper (aliases()) and
init macros, helpers of their own whose body is one pthread_mutex_init (init_macros())."""

import re

from rclify.ctext.tokens import balanced, call_arguments, code_only, iter_tokens, matching_bracket, tokenize
from rclify.lock_identity.lock_helpers.c_text import INIT, MAX_MACRO_DEPTH, calls_in
from rclify.lock_identity.lock_helpers.lock_expressions import bare, root
from rclify.lock_identity.lock_helpers.model import Helper, HelperLock, MacroAlias

# what a macro alias may pass to its helper besides its parameters (strings are blanked: "  ")
_CONSTANT = re.compile(r"""__FILE__|__LINE__|__func__|__FUNCTION__|__PRETTY_FUNCTION__|NULL|[-+]?\s*\d\w*|"[^"]*"|'[^']*'""")


def aliases(definitions: dict[str, list[tuple[str, int, tuple[str, ...], str]]], is_helper,
            functions_defined=frozenset(), macro_helpers=frozenset()) -> dict[str, MacroAlias]:
    """The macro aliases of helpers among the tree's function-like macros (definitions: name ->
    (file, line, parameters, body) of each of its definitions; is_helper(name): a helper function
    of that name exists; macro_helpers: the init macros, helpers defined as macros).  A macro is
    one when its whole body is one call of a helper, or of another alias (up to MAX_MACRO_DEPTH),
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
    for _ in range(MAX_MACRO_DEPTH + 1):
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
    statement_macros = frozenset(name for name, defs in definitions.items()
                                 if all(_is_statement(d[3]) or _passes_through(d[2], d[3]) for d in defs))
    for name, defs in definitions.items():
        inits = [d for d in defs if _init_call(d[3], statement_macros) is not None]
        if len({(params, re.sub(r"\s+", "", body)) for _, _, params, body in inits}) != 1:
            continue
        # the other definitions are another platform's (zstd's InitializeCriticalSection): they
        # may not reach a pthread mutex or a function of the tree (a helper of another shape)
        if any(not re.fullmatch(r"[A-Za-z_]\w*", n) or n.startswith("pthread_") or n in functions_defined
               for d in defs if d not in inits for n, _, _ in calls_in(d[3], 0, len(d[3]))):
            continue
        file, line, params, body = inits[0]
        args, has_value = _init_call(body, statement_macros)
        if len(args) != 2 or any(p == "..." or not re.fullmatch(r"[A-Za-z_]\w*", p) for p in params):
            continue
        lock = bare(args[0])
        if lock.startswith("&") and bare(lock[1:]) in params:
            param, path = params.index(bare(lock[1:])), "&"
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
    first = next(iter_tokens(body), None)  # the first token only: every #define of the tree is asked
    return first is not None and first.text in ("do", "{", "if")


def _passes_through(params: tuple[str, ...], body: str) -> bool:
    """Is a macro body its one parameter as it is (`#define LOCKRET(func) func`, `(func)`)?  A file
    defines unbound's checking LOCKRET so, before the header whose init macro passes its init
    through it: a use is still one init call, as a statement."""
    return len(params) == 1 and [t.text for t in tokenize(body) if t.text not in ("(", ")")] == [params[0]] \
        and balanced(body)


def _whole_call(body: str) -> bool:
    """Is the body one call, `NAME(...)` and nothing after it?"""
    tokens = tokenize(body)
    return len(tokens) > 2 and tokens[1].text == "(" and matching_bracket(tokens, 1) == len(tokens) - 1


def _init_call(body: str, statement_macros: frozenset[str] = frozenset()) -> tuple[tuple[str, ...], bool] | None:
    """(arguments, has a value) of the pthread_mutex_init call a macro body is: alone or with its
    result negated or compared with 0 (the macro's value is the init's result, or the truth of
    it), or cast to void (no value); or the one pthread_mutex_init among other calls that are no
    pthread mutex or condvar calls, in a statement or passed to a statement macro (statement_macros:
    the tree's macros whose bodies are statements, or in some definitions the argument passed
    through) (no value); None for any other body."""
    calls = list(calls_in(body, 0, len(body)))
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


def with_macro_inits(helper: Helper, macro: Helper | None) -> None:
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
