"""The lock vocabulary: what counts as a lock operation in this tree, and recognising one.

The one place where the tree's lock macros and wrapper functions are inferred (with libclang:
add_macros, add_wrappers) and where a statement's text is read as a lock operation (classify).

A statement is read from its source text (so macro invocations are seen as written):
    pthread_mutex_lock(&m);                      direct call
    LOCK(m);  mutex_lock(&m);                    lock macros, expanded here from their #define
    LOCKED(stats);                               ... with `##` / `#` (&name##_lock) and __VA_ARGS__
    {pthread_mutex_lock(&(tbl->locks[i]));}      braces left by macro expansion
    do { pthread_mutex_lock(&m); } while (0);
    (void)pthread_mutex_unlock(&m);
    if (pthread_mutex_lock(&m) != 0) abort();    checked result with a no-return failure path
    item_lock(hv);                               wrapper functions (body only locks an expression)
"""

from dataclasses import dataclass, field
from pathlib import Path

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range
from rclify.ctext.tokens import Token, identifiers_used, matching_bracket, normalize, pretty, split_args, tokenize

K = ci.CursorKind

PTHREAD_OPS = {
    "pthread_mutex_lock": "lock",
    "pthread_mutex_unlock": "unlock",
    "pthread_mutex_trylock": "trylock",
    # a lock with a deadline (it may fail with ETIMEDOUT): never extracted, see region_bounds.py
    "pthread_mutex_timedlock": "timedlock",
    "pthread_mutex_clocklock": "timedlock",
}
PTHREAD_ARITY = {"pthread_mutex_timedlock": 2, "pthread_mutex_clocklock": 3}  # the others take the mutex only
TIMED_LOCKS = {name for name, kind in PTHREAD_OPS.items() if kind == "timedlock"}
_MAX_EXPANSION_DEPTH = 8


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...]
    body: str


@dataclass(frozen=True)
class Wrapper:
    """A function whose body does nothing but lock, unlock or trylock one expression."""

    name: str
    kind: str
    params: tuple[str, ...]
    param_types: tuple[str, ...]  # type spellings, for the accessor's prototype
    expr: str  # the pthread_mutex_t * expression, in terms of params and file-scope names
    file: str
    is_static: bool
    start_offset: int  # where the definition starts
    end_offset: int  # where the definition ends (the accessor is emitted there)

    @property
    def accessor(self) -> str:
        return f"rclify_mutex_of_{self.name}"


@dataclass(frozen=True)
class LockOp:
    kind: str  # lock | unlock | trylock | timedlock (pthread_mutex_timedlock and _clocklock)
    mutex: str  # a pthread_mutex_t * expression valid where the statement stands
    key: str  # identity of the lock, for pairing a lock with its unlock
    via: str = ""  # macro or wrapper the call was reached through
    checked: bool = False  # result tested, failure path does not return
    wrapper: Wrapper | None = None
    wrapper_expr: str = ""  # for a wrapper call: the mutex expression with the arguments in
    result: str = ""  # C that keeps the variable the call's result went to: "err = 0;", "int err = 0;"


@dataclass
class Vocabulary:
    """What counts as a lock operation: pthread calls, plus the program's macros and wrappers."""

    macros: dict[str, Macro] = field(default_factory=dict)
    wrappers: dict[str, Wrapper] = field(default_factory=dict)

    def names(self) -> set[str]:
        return set(PTHREAD_OPS) | set(self.macros) | set(self.wrappers)

    def add_macro(self, name: str, params: tuple[str, ...], body: str) -> bool:
        """Keeps a #define only if its body uses a known lock operation; says if it was kept."""
        if name not in self.macros and any(t.text in self.names() for t in tokenize(body) if t.kind == "ident"):
            self.macros[name] = Macro(name, params, body)
            return True
        return False


def substitute(body: str, params: tuple[str, ...], args: list[str]) -> str | None:
    """Replaces macro/wrapper parameters by (argument) text, as the preprocessor does: `##`
    pastes the raw argument (`name##_lock`), `#p` makes it a string, `...` is __VA_ARGS__.
    None when the arguments do not fit the parameters or a `#` names no parameter."""
    mapping = _arguments(params, args)
    if mapping is None:
        return None
    tokens = tokenize(body)
    out, paste = [], False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if i and not paste and tok.text != "##":
            out.append(body[tokens[i - 1].end : tok.start])  # the spacing as written
        if tok.text == "##":
            paste = True
            i += 1
            continue
        pasted = paste or (i + 1 < len(tokens) and tokens[i + 1].text == "##")
        if tok.text == "#" and params:
            if i + 1 >= len(tokens) or tokens[i + 1].text not in mapping:
                return None
            arg = mapping[tokens[i + 1].text]
            out.append('"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"')
            i += 1
        elif tok.kind == "ident" and tok.text in mapping:
            raw = pasted or tok.text == "__VA_ARGS__"
            out.append(mapping[tok.text] if raw else f"({mapping[tok.text]})")
        else:
            out.append(tok.text)
        paste = False
        i += 1
    if paste:
        return None  # `##` at the end of a body is ill-formed
    return body[: tokens[0].start] + "".join(out) if tokens else body


def _arguments(params: tuple[str, ...], args: list[str]) -> dict[str, str] | None:
    if params and params[-1] == "...":
        named = params[:-1]
        if len(args) < len(named):
            return None
        return dict(zip(named, args)) | {"__VA_ARGS__": ", ".join(args[len(named):])}
    if len(params) != len(args):
        return None
    return dict(zip(params, args))


def classify(text: str, vocab: Vocabulary, depth: int = 0) -> LockOp | None:
    """The lock operation a statement's text performs, or None if it is not one."""
    if depth > _MAX_EXPANSION_DEPTH:
        return None
    tokens = tokenize(text)
    while tokens and tokens[-1].text == ";":
        tokens.pop()
    if not tokens:
        return None
    first = tokens[0].text
    if first == "{" and matching_bracket(tokens, 0) == len(tokens) - 1:
        return classify(text[tokens[0].end : tokens[-1].start], vocab, depth + 1)
    if first == "do" and len(tokens) > 6 and tokens[1].text == "{":
        close = matching_bracket(tokens, 1)
        tail = [t.text for t in tokens[close + 1 :]]
        if tail in (["while", "(", "0", ")"], ["while", "(", "false", ")"]):
            return classify(text[tokens[2].start : tokens[close].start], vocab, depth + 1)
        return None
    if first == "(" and len(tokens) > 3 and tokens[1].text == "void" and tokens[2].text == ")":
        return classify(text[tokens[3].start : tokens[-1].end], vocab, depth + 1)
    if first == "if" and len(tokens) > 3 and tokens[1].text == "(":
        return _classify_checked(tokens, text, vocab, depth)
    if any(t.text == "=" for t in tokens):
        return _classify_assigned(tokens, text, vocab, depth)
    return _classify_call(tokens, text, vocab, depth)


def lock_calls(text: str, vocab: Vocabulary, depth: int = 0) -> list[LockOp]:
    """Every lock operation text performs, in order, seen through the macros it invokes: for a
    statement classify() does not read as one lock operation (`WITH_LOCK(m, x++);` expands to a
    lock, the body and an unlock)."""
    if depth > _MAX_EXPANSION_DEPTH:
        return []
    tokens = tokenize(text)
    names = vocab.names()
    ops: list[LockOp] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.kind != "ident" or tok.text not in names:
            i += 1
            continue
        close = matching_bracket(tokens, i + 1) if i + 1 < len(tokens) and tokens[i + 1].text == "(" else i
        if close < 0:
            return ops
        call = text[tok.start : tokens[close].end]
        op = classify(call, vocab, depth + 1)
        macro = vocab.macros.get(tok.text)
        if op is not None:
            ops.append(op)
        elif macro is not None:
            args = split_args(text[tokens[i + 1].end : tokens[close].start]) if close > i else []
            body = substitute(macro.body, macro.params, args) if macro.params else macro.body
            found = lock_calls(body, vocab, depth + 1) if body is not None else []
            ops += [LockOp(o.kind, pretty(o.mutex), o.key, via=o.via or macro.name, wrapper=o.wrapper,
                           wrapper_expr=o.wrapper_expr) for o in found]
        i = close + 1
    return ops


def _classify_call(tokens: list[Token], text: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    if tokens[0].kind != "ident":
        return None
    name = tokens[0].text
    if name not in vocab.names():
        return None
    macro = vocab.macros.get(name)
    if macro is not None and not macro.params and len(tokens) == 1:
        return _expanded(macro, [], vocab, depth)  # object-like: LOCK_STATS;
    if len(tokens) < 3 or tokens[1].text != "(" or matching_bracket(tokens, 1) != len(tokens) - 1:
        return None
    args = split_args(text[tokens[1].end : tokens[-1].start])
    if name in PTHREAD_OPS:
        if len(args) != PTHREAD_ARITY.get(name, 1):
            return None
        return LockOp(PTHREAD_OPS[name], args[0], normalize(args[0]))
    if macro is not None:
        return _expanded(macro, args, vocab, depth)
    wrapper = vocab.wrappers[name]
    expr = substitute(wrapper.expr, wrapper.params, args)
    if expr is None:
        return None
    call = f"{wrapper.accessor}({', '.join(args)})"
    return LockOp(wrapper.kind, call, normalize(expr), via=name, wrapper=wrapper, wrapper_expr=expr)


def _expanded(macro: Macro, args: list[str], vocab: Vocabulary, depth: int) -> LockOp | None:
    body = substitute(macro.body, macro.params, args) if macro.params else macro.body
    if body is None:
        return None
    op = classify(body, vocab, depth + 1)
    if op is None:
        return None
    return LockOp(op.kind, pretty(op.mutex), op.key, via=macro.name, checked=op.checked, wrapper=op.wrapper,
                  wrapper_expr=op.wrapper_expr, result=op.result)


def _classify_checked(tokens: list[Token], text: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    """if (FAILED) FAILURE;  (no else) where FAILED is true exactly when the lock call failed:
    `CALL`, `CALL != 0`, `(v = CALL) != 0`, `!(CALL == 0)`, and any such through expression
    macros and negations: libmicrohttpd's `if (! MHD_mutex_lock_ (m))` with
    `#define MHD_mutex_lock_(m) (! (pthread_mutex_lock ((m))))`.

    The failure branch is dropped: a section the runtime cannot lock aborts with a message, so
    that branch could only run on a broken mutex.  Success tests (`== 0`, `!CALL`) are regions of
    their own, not checks, and are not accepted here."""
    close = matching_bracket(tokens, 1)
    if close < 0 or close == len(tokens) - 1 or any(t.text == "else" for t in tokens[close + 1 :]):
        return None
    found = _failure_test(text[tokens[2].start : tokens[close - 1].end], vocab, depth + 1) if close > 2 else None
    if found is None or not found[1]:
        return None
    op = found[0]
    return LockOp(op.kind, op.mutex, op.key, op.via, True, op.wrapper, op.wrapper_expr, op.result)


def _failure_test(text: str, vocab: Vocabulary, depth: int) -> tuple[LockOp, bool] | None:
    """(the lock operation in an if-condition, whether the condition is true when it FAILED),
    following `!`, `!= 0`, `== 0`, parentheses and expression macros (only these count towards the
    expansion depth); None for anything else."""
    tokens = tokenize(text)
    if not tokens or depth > _MAX_EXPANSION_DEPTH:
        return None
    if tokens[0].text == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        return _failure_test(text[tokens[1].start : tokens[-2].end], vocab, depth) if len(tokens) > 2 else None
    if tokens[0].text == "!":
        inner = _failure_test(text[tokens[1].start :], vocab, depth) if len(tokens) > 1 else None
        return (inner[0], not inner[1]) if inner else None
    if len(tokens) > 2 and tokens[-1].text == "0" and tokens[-2].text in ("!=", "=="):
        inner = _failure_test(text[: tokens[-2].start], vocab, depth)
        return (inner[0], inner[1] == (tokens[-2].text == "!=")) if inner else None
    macro = vocab.macros.get(tokens[0].text)
    if macro is not None and macro.params and len(tokens) > 2 and tokens[1].text == "(" \
            and matching_bracket(tokens, 1) == len(tokens) - 1:
        body = substitute(macro.body, macro.params, split_args(text[tokens[1].end : tokens[-1].start]))
        inner = _failure_test(body, vocab, depth + 1) if body is not None else None
        if inner is not None:
            op = inner[0]
            return LockOp(op.kind, _unwrapped(pretty(op.mutex)), op.key, macro.name, op.checked, op.wrapper,
                          op.wrapper_expr, op.result), inner[1]
    op = classify(text, vocab, depth)
    if op is None or op.kind in ("trylock", "timedlock"):
        return None
    return op, True  # the call's value (or `v = CALL`'s): nonzero when it failed


def _unwrapped(expr: str) -> str:
    """expr without the parentheses around all of it: `((&m))` -> `&m`."""
    while expr.startswith("(") and expr.endswith(")"):
        tokens = tokenize(expr)
        if matching_bracket(tokens, 0) != len(tokens) - 1:
            break
        expr = expr[1:-1].strip()
    return expr


def _classify_assigned(tokens: list[Token], text: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    """v = CALL;  TYPE v = CALL;  — the variable then holds 0 (success) in the caller."""
    eq = next((i for i, t in enumerate(tokens) if t.text == "="), -1)
    if eq < 1 or tokens[eq - 1].kind != "ident" or not all(t.kind == "ident" or t.text == "*" for t in tokens[:eq]):
        return None
    op = classify(text[tokens[eq + 1].start : tokens[-1].end], vocab, depth + 1) if eq + 1 < len(tokens) else None
    if op is None or op.kind in ("trylock", "timedlock"):
        return None
    result = text[tokens[0].start : tokens[eq].start].strip() + " = 0;"
    return LockOp(op.kind, op.mutex, op.key, op.via, True, op.wrapper, op.wrapper_expr, result)


# -- inference: the tree's macros and wrappers ---------------------------------------------------

def add_macros(parsed: ParsedFile, root: Path, vocab: Vocabulary) -> None:
    """Lock macros defined in the tree (not system headers), through any chain of macros."""
    pending = []
    in_tree: dict[str, bool] = {}  # file name -> under root (thousands of system macros: cache)
    for cursor in parsed.tu.cursor.get_children():
        if cursor.kind != K.MACRO_DEFINITION:
            continue
        file = cursor.location.file
        if file is None:
            continue
        name = file.name
        if name not in in_tree:
            in_tree[name] = Path(name).resolve().is_relative_to(root)
        if not in_tree[name]:
            continue
        definition = _macro_definition(cursor)
        if definition:
            pending.append(definition)
    changed = True
    while changed:  # a macro may be defined through another lock macro defined later
        changed = False
        for name, params, body in pending:
            changed |= vocab.add_macro(name, params, body)


def _macro_definition(cursor: ci.Cursor) -> tuple[str, tuple[str, ...], str] | None:
    tokens = list(cursor.get_tokens())
    if len(tokens) < 2:
        return None
    name = tokens[0].spelling
    params: list[str] = []
    body_from = 1
    adjacent = tokens[1].extent.start.offset == tokens[0].extent.end.offset
    if tokens[1].spelling == "(" and adjacent:
        i = 2
        while i < len(tokens) and tokens[i].spelling != ")":
            if tokens[i].spelling != ",":
                params.append(tokens[i].spelling)
            i += 1
        body_from = i + 1
    body = " ".join(t.spelling for t in tokens[body_from:])
    return name, tuple(params), body


def add_wrappers(parsed: ParsedFile, root: Path, vocab: Vocabulary) -> None:
    """Functions of this file whose body does nothing but lock/unlock one expression."""
    for fn in parsed.tu.cursor.get_children():
        if fn.kind != K.FUNCTION_DECL or not fn.is_definition() or not parsed.is_here(fn):
            continue
        op = wrapper_op(parsed, fn, vocab)
        if op is None:
            continue
        params = [c for c in fn.get_children() if c.kind == K.PARM_DECL]
        vocab.wrappers[fn.spelling] = Wrapper(
            name=fn.spelling, kind=op.kind, params=tuple(p.spelling for p in params),
            param_types=tuple(p.type.spelling for p in params), expr=op.mutex,
            file=str(parsed.path.relative_to(root)), is_static=fn.storage_class == ci.StorageClass.STATIC,
            start_offset=fn.extent.start.offset, end_offset=fn.extent.end.offset,
        )


def wrapper_op(parsed: ParsedFile, fn: ci.Cursor, vocab: Vocabulary) -> LockOp | None:
    body = next((c for c in fn.get_children() if c.kind == K.COMPOUND_STMT), None)
    if body is None:
        return None
    statements = list(body.get_children())
    if len(statements) != 1:
        return None
    stmt = statements[0]
    text = parsed.text(*statement_range(parsed, stmt))
    if stmt.kind == K.RETURN_STMT:
        text = text.strip()[len("return"):]
    op = classify(text, vocab)
    if op is None or op.kind not in ("lock", "unlock"):
        return None
    locals_ = {c.spelling for c in fn.walk_preorder() if c.kind == K.VAR_DECL}
    if identifiers_used(op.mutex) & locals_:
        return None
    return op
