"""A statement read as one lock operation (classify), or as the lock operations it performs in order
(lock_calls): the plain call and the forms that only wrap it.

    pthread_mutex_lock(&m);                      direct call
    LOCK(m);  mutex_lock(&m);                    lock macros, expanded here from their #define (only
                                                 the #if branch the build compiles: libclang's)
    LOCKED(stats);                               ... with `##` / `#` (&name##_lock) and __VA_ARGS__
    {pthread_mutex_lock(&(tbl->locks[i]));}      braces left by macro expansion
    do { pthread_mutex_lock(&m); } while (0);
    (void)pthread_mutex_unlock(&m);
    item_lock(hv);  take(l);                     wrapper functions, through macros too
                                                 (`#define take(l) take_(l, __FILE__, __LINE__)`)
    W(pthread_mutex_lock(l));                    a macro of the tree given a lock call (`#define W(f) f`)
classify dispatches the checked forms (`if (lock(m)) abort();`, `err = lock(m);`...) to checked.py,
handing them itself to read the call inside.
"""

from dataclasses import replace

from rclify import pthread_api
from rclify.ctext.tokens import Token, identifiers_used, matching_bracket, normalize, pretty, split_args, tokenize
from rclify.transform.lock_statements.checked import (classify_asserted, classify_assigned, classify_checked,
                                                      classify_or_die)
from rclify.transform.lock_statements.expansion import (MAX_EXPANSION_DEPTH, enclosed_statement, joined,
                                                        statement_tokens, substitute, unwrapped)
from rclify.transform.vocabulary import PTHREAD_OPS, LockOp, Macro, Vocabulary

PTHREAD_ARITY = pthread_api.LOCK_ARITY  # the others take the mutex only


def classify(text: str, vocab: Vocabulary, depth: int = 0) -> LockOp | None:
    """The lock operation a statement's text performs, or None if it is not one."""
    tokens = statement_tokens(text, depth)
    if not tokens:
        return None
    first = tokens[0].text
    if (inner := enclosed_statement(tokens, text)) is not None:  # `{ S }`, `do { S } while (0)`
        return classify(inner, vocab, depth + 1) if inner else None
    if first == "(" and len(tokens) > 3 and tokens[1].text == "void" and tokens[2].text == ")":
        return classify(text[tokens[3].start : tokens[-1].end], vocab, depth + 1)
    if (rest := _after_result_declaration(tokens, text)) is not None:
        op = classify(rest, vocab, depth + 1)  # `{ int e; if ((e = CALL) != 0) log(e); }`
        return replace(op, result="") if op is not None and op.checked else None
    if (expansion := _pass_through(tokens, text, vocab)) is not None:
        op = classify(expansion, vocab, depth + 1)  # `W(pthread_mutex_lock(l))`, `#define W(f) f`
        return replace(op, mutex=pretty(op.mutex)) if op is not None else None
    if (call := _through_table(tokens, text, vocab)) is not None:
        return _table_op(call, vocab, depth)  # `OPS.acquire(l)`: the function its table holds
    if first == "if" and len(tokens) > 3 and tokens[1].text == "(":
        return classify_checked(tokens, text, vocab, depth, classify)
    if first == "assert" and len(tokens) > 3 and tokens[1].text == "(" and matching_bracket(tokens, 1) == len(tokens) - 1:
        return classify_asserted(text[tokens[2].start : tokens[-2].end], vocab, depth, classify)
    if first == "(" and len(tokens) > 2 and matching_bracket(tokens, 0) == len(tokens) - 1:
        return classify(text[tokens[0].end : tokens[-1].start], vocab, depth + 1)
    if any(t.text in ("&&", "||") for t in tokens):
        return classify_or_die(text[: tokens[-1].end], vocab, depth, classify)
    if any(t.text == "=" for t in tokens):
        return classify_assigned(tokens, text, vocab, depth, classify)
    return _classify_call(tokens, text, vocab, depth)


def _after_result_declaration(tokens: list[Token], text: str) -> str | None:
    """The statement after a first one declaring variables with no initializer (`int e;`,
    `int e, f;`), when a macro's block declares where a checked lock call's result goes
    (`#define CHECKED(f) do { int e; if ((e = (f)) != 0) log_err(e); } while (0)`); else None.
    The variables are the block's own: nothing after the block can use them."""
    semicolon = next((i for i, t in enumerate(tokens) if t.text == ";"), None)
    if semicolon is None or semicolon < 2 or semicolon == len(tokens) - 1:
        return None
    declaration = tokens[:semicolon]
    if not all(t.kind == "ident" or t.text in ("*", ",") for t in declaration) \
            or declaration[-1].kind != "ident" or declaration[0].text in ("return", "goto", "break", "continue"):
        return None
    declared = {t.text for i, t in enumerate(declaration) if t.kind == "ident"
                and (i + 1 == len(declaration) or declaration[i + 1].text == ",")}
    rest = text[tokens[semicolon].end :]
    later = tokenize(rest)
    # one statement more, that uses the variables only as the check's result
    if any(t.text == ";" for t in later[:-1]) and later[-1].text == ";" and \
            sum(t.text == ";" for t in later) > 1:
        return None
    return rest if declared & {t.text for t in later} else None


def _pass_through(tokens: list[Token], text: str, vocab: Vocabulary) -> str | None:
    """The expansion of `NAME(args)`, a function-like macro of the tree that is no lock macro
    itself but is given a lock operation as an argument (`#define W(f) f`, a checking macro
    `#define CHECKED(f) do { ... (f) ... } while (0)` under `#define LOCK(l)
    CHECKED(pthread_mutex_lock(l))`); None when the statement is not that, or NAME has several
    different definitions (which one a file sees is not known here)."""
    if tokens[0].kind != "ident" or len(tokens) < 4 or tokens[1].text != "(" \
            or matching_bracket(tokens, 1) != len(tokens) - 1:
        return None
    definitions = {(d[0], d[1]) for d in vocab.pending.get(tokens[0].text, ())}
    if len(definitions) != 1:
        return None
    params, body = next(iter(definitions))
    if not params:
        return None
    args = split_args(text[tokens[1].end : tokens[-1].start])
    if not identifiers_used(" ".join(args)) & vocab.names():
        return None
    return substitute(body, params, args)


def _through_table(tokens: list[Token], text: str, vocab: Vocabulary) -> tuple[str, str, str] | None:
    """(table, field, arguments) of `T.field(args)` (a nested field `T.a.b(args)`) with T an
    operations table of the tree, written directly or through object-like macros (`OPS.acquire(l)`
    under `#define OPS mr_ptmutex_ops`); None for any other statement."""
    if tokens[0].kind != "ident" or len(tokens) < 6 or tokens[1].text != ".":
        return None
    head = tokens[0].text
    for _ in range(MAX_EXPANSION_DEPTH):  # object-like aliases of the table's name
        macro = vocab.macros.get(head)
        if macro is None or macro.params:
            break
        body = [t for t in tokenize(macro.body) if t.text not in ("(", ")")]
        if len(body) != 1 or body[0].kind != "ident":
            return None
        head = body[0].text
    if head not in vocab.tables:
        return None
    path, i = [], 1
    while i + 1 < len(tokens) and tokens[i].text == "." and tokens[i + 1].kind == "ident":
        path.append(tokens[i + 1].text)
        i += 2
    if i >= len(tokens) or tokens[i].text != "(" or matching_bracket(tokens, i) != len(tokens) - 1:
        return None
    return head, ".".join(path), text[tokens[i].end : tokens[-1].start]


def _table_op(call: tuple[str, str, str], vocab: Vocabulary, depth: int) -> LockOp | None:
    """A call through a field of a const operations table read as the call of the function its
    initialiser names (C allows no other store into the table); None when the table is not
    const, is defined differently in two places, or the function is no lock operation.  A lock
    wrapper reached so is read as the mutex it locks (its accessor may be static in the table's
    file, out of reach of the caller's): only a wrapper whose mutex is an expression of its
    arguments, with no work or checks of its own, is."""
    name, path, args = call
    table = vocab.tables[name]
    function = table.fields.get(path)
    if not table.resolvable or function is None or function not in vocab.names():
        return None
    op = classify(f"{function}({args})", vocab, depth + 1)
    if op is None:
        return None
    via = f"{name}.{path}"
    if op.wrapper is None:
        return replace(op, via=via)
    chain = op.wrapper.chain()
    if any(w.work or w.checks or w.returns_mutex for w in chain) or op.wrapper_expr is None \
            or not identifiers_used(op.wrapper.identity or op.wrapper.expr) <= set(op.wrapper.params):
        return None
    return LockOp(op.kind, op.wrapper_expr, op.key, via=via)


def lock_calls(text: str, vocab: Vocabulary, depth: int = 0) -> list[LockOp]:
    """Every lock operation text performs, in order, seen through the macros it invokes: for a
    statement classify() does not read as one lock operation (`WITH_LOCK(m, x++);` expands to a
    lock, the body and an unlock)."""
    if depth > MAX_EXPANSION_DEPTH:
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
            ops += [replace(o, mutex=pretty(o.mutex), via=o.via or macro.name, checked=False, result="",
                            conditions=joined(macro.conditions, o.conditions)) for o in found]
        i = close + 1
    return ops


def _postfix_effects(expr: str) -> tuple[str, str, tuple[str, ...]] | None:
    """`&slots[i++].m` -> ('&slots[i].m', 'i++;', ('i',)): the lock an unlock statement releases is
    named by the values before its postfix increments; the increments run once, after it (the
    caller's, after the section: plan.check_unlock_effects says when that is sound).  None when
    expr has no postfix increment of a plain variable, or other side effects."""
    tokens = tokenize(expr)
    kept, increments, variables = [], [], []
    for i, tok in enumerate(tokens):
        if tok.text in ("++", "--") and i > 0 and tokens[i - 1].kind == "ident" \
                and (i < 2 or tokens[i - 2].text not in (".", "->")):
            increments.append(f"{tokens[i - 1].text}{tok.text};")
            variables.append(tokens[i - 1].text)
            continue
        if tok.text in ("++", "--", "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=") \
                or tok.text == "(" and i > 0 and tokens[i - 1].kind == "ident":
            return None  # another side effect, or a call that may have one
        kept.append(tok.text)
    if not increments:
        return None
    return normalize(" ".join(kept)), " ".join(increments), tuple(variables)


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
        if depth == 0 and PTHREAD_OPS[name] == "unlock" and (effect := _postfix_effects(args[0])) is not None:
            key, increments, variables = effect
            return LockOp("unlock", key, key, result=increments, effect_vars=variables)
        return LockOp(PTHREAD_OPS[name], args[0], normalize(args[0]))
    if macro is not None:
        return _expanded(macro, args, vocab, depth)
    wrapper = vocab.wrappers.get(name)
    if wrapper is None:
        return None  # an operations table's name: _through_table
    expr = substitute(wrapper.identity or wrapper.expr, wrapper.params, args)
    if expr is None:
        return None
    expr = _member_through_address(expr)  # take(&a->lk): `&((&a->lk))->m` is `&a->lk.m`
    call = f"{wrapper.accessor}({', '.join(args)})"
    work = f"{wrapper.work_function}({', '.join(args)});" if wrapper.work else ""
    return LockOp(wrapper.kind, call, normalize(expr), via=name, wrapper=wrapper, wrapper_expr=expr, work=work)


def _member_through_address(expr: str) -> str:
    """expr with each `(&E)->` written `(E).`: a wrapper's `&l->m` given `&stats` names `stats.m`,
    which the lock table knows."""
    while True:
        tokens = tokenize(expr)
        for i, tok in enumerate(tokens):
            close = matching_bracket(tokens, i) if tok.text == "(" else -1
            if close < 0 or close + 1 >= len(tokens) or tokens[close + 1].text != "->":
                continue
            inner = unwrapped(expr[tokens[i + 1].start : tokens[close].start] if close > i + 1 else "")
            if inner.startswith("&") and not inner.startswith("&&"):
                expr = expr[: tok.start] + "(" + inner[1:] + ")." + expr[tokens[close + 1].end :]
                break
        else:
            return expr


def _expanded(macro: Macro, args: list[str], vocab: Vocabulary, depth: int) -> LockOp | None:
    if macro.params:
        body = substitute(macro.body, macro.params, args)
    elif args:  # an object-like alias called (`#define my_lock pthread_mutex_lock`): its body, then the call's
        body = f"{macro.body}({', '.join(args)})"
    else:
        body = macro.body
    if body is None:
        return None
    op = classify(body, vocab, depth + 1)
    if op is None:
        return None
    return replace(op, mutex=pretty(op.mutex), via=macro.name, conditions=joined(macro.conditions, op.conditions))
