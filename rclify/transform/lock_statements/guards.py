"""Cleanup guards: a declaration whose variable holds a lock to the end of its block (guard_lock).

    GUARD(m);                                    a `__attribute__((cleanup))` variable holding the
                                                 lock to the end of its block (guard_lock)
"""

from dataclasses import dataclass, replace

from rclify.ctext.tokens import matching_bracket, normalize, pretty, tokenize, top_level_split
from rclify.transform.lock_statements.calls import classify
from rclify.transform.lock_statements.expansion import invocation_body, statement_tokens
from rclify.transform.vocabulary import LockOp, Vocabulary


@dataclass(frozen=True)
class Guard:
    """A lock guard: a variable whose initializer locks and whose cleanup function unlocks."""

    op: LockOp  # the lock its initializer takes
    variable: str
    release: LockOp  # the cleanup function's unlock, called with the variable's address


def guard_lock(text: str, vocab: Vocabulary, depth: int = 0) -> Guard | None:
    """A declaration statement (as written, or through the macro it invokes) declaring one
    `__attribute__((cleanup(F)))` variable initialised by a lock that yields the mutex, where F
    unlocks what the variable points to:
        #define GUARD(m) pthread_mutex_t *g_ __attribute__((cleanup(guard_unlock))) = guard_lock(&(m))
    with guard_lock a wrapper returning the mutex it locked (`pthread_mutex_lock(m); return m;`)
    or `(pthread_mutex_lock(&m), &m)`, and guard_unlock an unlock wrapper on `*p`.  The lock is
    held from the declaration to the end of the variable's block, whichever way the block is left."""
    tokens = statement_tokens(text, depth)
    if not tokens:
        return None
    macro = vocab.macros.get(tokens[0].text)
    if macro is not None:
        body = invocation_body(macro, tokens, text)
        guard = guard_lock(body, vocab, depth + 1) if body is not None else None
        return replace(guard, op=replace(guard.op, mutex=pretty(guard.op.mutex), via=macro.name)) if guard else None
    cleanup, kept = None, []  # the cleanup function; the tokens outside __attribute__((...))
    i = 0
    while i < len(tokens):
        if tokens[i].text in ("__attribute__", "__attribute") and i + 1 < len(tokens) and tokens[i + 1].text == "(":
            close = matching_bracket(tokens, i + 1)
            if close < 0:
                return None
            inner = [t.text for t in tokens[i + 2 : close]]
            if "cleanup" in inner or "__cleanup__" in inner:
                at = inner.index("cleanup") if "cleanup" in inner else inner.index("__cleanup__")
                if inner[at + 1 : at + 2] != ["("] or at + 3 >= len(inner) or inner[at + 3] != ")":
                    return None
                cleanup = inner[at + 2]
            i = close + 1
            continue
        kept.append(tokens[i])
        i += 1
    eq = next((j for j, t in enumerate(kept) if t.text == "="), -1)
    if cleanup is None or eq < 2 or kept[eq - 1].kind != "ident" \
            or not all(t.kind == "ident" or t.text == "*" for t in kept[:eq]):
        return None
    variable = kept[eq - 1].text
    op = _yields_locked_mutex(text[kept[eq].end : kept[-1].end], vocab, depth)
    release = classify(f"{cleanup}(&{variable});", vocab, depth + 1) if cleanup in vocab.wrappers else None
    if op is None or release is None or release.kind != "unlock" \
            or release.key not in (f"*(&{variable})", f"*&{variable}", variable):
        return None
    if op.wrapper is not None:  # the wrapper returns its argument: that is the mutex, no accessor needed
        op = replace(op, mutex=pretty(op.wrapper_expr), wrapper=None, wrapper_expr="")
    return Guard(op, variable, release)


def _yields_locked_mutex(expr: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    """The lock expr takes if its value is the mutex it locked: a wrapper that returns it, or
    `(LOCK CALL, M)` with M that mutex."""
    op = classify(expr, vocab, depth + 1)
    if op is not None:
        return op if op.kind == "lock" and op.wrapper is not None and op.wrapper.returns_mutex else None
    tokens = tokenize(expr)
    if len(tokens) > 2 and tokens[0].text == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        parts = top_level_split(expr[tokens[1].start : tokens[-1].start], ",")
        if len(parts) == 2:
            op = classify(parts[0], vocab, depth + 1)
            if op is not None and op.kind == "lock" and normalize(parts[1]) == op.key:
                return op
    return None
