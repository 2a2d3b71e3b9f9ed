"""Scoped lock statements: a statement that holds a lock for its block (scoped_lock, scoped_lock_shape).

    WITH_LOCK(m) { ... }                         a `for` locking in its first clause, unlocking in
                                                 its third, running its body once (scoped_lock);
    mythread_sync(m) { ... }                     or locking and unlocking in its condition's two
                                                 arms, its body in a run-once `for` (xz)
"""

from dataclasses import replace

from rclify.ctext.tokens import matching_bracket, pretty, tokenize, top_level_split
from rclify.transform.lock_statements.calls import classify, lock_calls
from rclify.transform.lock_statements.expansion import MAX_EXPANSION_DEPTH, invocation_body, joined
from rclify.transform.vocabulary import LockOp, Vocabulary


def scoped_lock(header: str, vocab: Vocabulary, depth: int = 0) -> LockOp | None:
    """The lock a scoped lock statement holds while its body runs, once (scoped_lock_shape)."""
    shape = scoped_lock_shape(header, vocab, depth)
    return shape[0] if shape is not None else None


def scoped_lock_shape(header: str, vocab: Vocabulary, depth: int = 0) -> tuple[LockOp, bool] | None:
    """(the lock, whether the body is in a run-once inner `for`) of a scoped lock statement: header
    is the text before the body, a `for (INIT; COND; STEP)` as written or as a macro invocation
    expands it, in one of two forms:
        #define WITH_LOCK(m) for (int i_ = (pthread_mutex_lock(&(m)), 0); !i_; pthread_mutex_unlock(&(m)), i_ = 1)
    INIT takes one lock, STEP releases it and nothing else, COND tests a flag that INIT makes true
    and STEP false (`!f` after `f = 0` / `f = 1`, `f` after `f = 1` / `f = 0`, `f++`...);
        for (unsigned i_ = 0; i_ ? (pthread_mutex_unlock(&(m)), 0) : (pthread_mutex_lock(&(m)), 1); i_ = 1)
    (xz's mythread_sync): COND locks and yields true while the flag has INIT's value, unlocks and
    yields false once STEP has changed it.  Either way the body runs exactly once with the lock
    held.  xz's form follows it with `for (unsigned j_ = 0; !j_; j_ = 1)`, a run-once loop whose
    `break` and `continue` end the section as its end does (the second value is True then).
    None for any other header."""
    if depth > MAX_EXPANSION_DEPTH:
        return None
    tokens = tokenize(header)
    if not tokens:
        return None
    if tokens[0].text != "for":
        macro = vocab.macros.get(tokens[0].text)
        if macro is None:
            return None
        body = invocation_body(macro, tokens, header)
        shape = scoped_lock_shape(body, vocab, depth + 1) if body is not None else None
        if shape is None:
            return None
        return replace(shape[0], mutex=pretty(shape[0].mutex), via=macro.name,
                       conditions=joined(macro.conditions, shape[0].conditions)), shape[1]
    if len(tokens) < 4 or tokens[1].text != "(":
        return None
    close = matching_bracket(tokens, 1)
    inner = False
    if close != len(tokens) - 1:  # `for (...) for (...)`: a run-once inner loop, no lock in it
        rest = header[tokens[close].end:]
        if close < 0 or not _run_once_loop(rest, vocab, depth):
            return None
        inner = True
    clauses = top_level_split(header[tokens[1].end : tokens[close].start], ";")
    if len(clauses) != 3:
        return None
    op = _lock_in_first_clause(*clauses, vocab, depth) or _lock_in_condition(*clauses, vocab, depth)
    return (replace(op, checked=False, result=""), inner) if op is not None else None


def _lock_in_first_clause(init: str, cond: str, step: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    taken, released = lock_calls(init, vocab, depth + 1), lock_calls(step, vocab, depth + 1)
    if len(taken) != 1 or taken[0].kind != "lock" or lock_calls(cond, vocab, depth + 1) \
            or len(released) != 1 or released[0].kind != "unlock" or released[0].key != taken[0].key \
            or released[0].work:  # an unlock wrapper's work would run after the section: not read
        return None
    return taken[0] if _runs_once(init, cond, step, vocab) else None


def _lock_in_condition(init: str, cond: str, step: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    """`f ? (UNLOCK, 0) : (LOCK, 1)` with f = INIT's value first, STEP's after (see scoped_lock_shape)."""
    if lock_calls(init, vocab, depth + 1) or lock_calls(step, vocab, depth + 1):
        return None
    test, *branches = top_level_split(cond, "?")
    if len(branches) != 1:
        return None
    arms = top_level_split(branches[0], ":")
    flag = _flag_test(test)
    if len(arms) != 2 or flag is None:
        return None
    name, true_when_zero = flag
    first = _assigned(init, name, vocab)
    then = _stepped(step, name, first) if first is not None else None
    if then is None or (first == 0) == (then == 0):
        return None

    def arm(flag_value: int) -> tuple[LockOp, int | None] | None:
        text = arms[0] if (flag_value == 0) == true_when_zero else arms[1]  # the arm cond takes
        calls = lock_calls(text, vocab, depth + 1)
        tokens = tokenize(text)
        if len(calls) != 1 or len(tokens) < 3 or tokens[0].text != "(" or matching_bracket(tokens, 0) != len(tokens) - 1:
            return None
        parts = top_level_split(text[tokens[1].start : tokens[-1].start], ",")
        return (calls[0], _value(parts[-1], vocab)) if len(parts) == 2 else None

    entered, left = arm(first), arm(then)
    if entered is None or left is None:
        return None
    (lock, lock_value), (unlock, unlock_value) = entered, left
    if lock.kind != "lock" or unlock.kind != "unlock" or lock.key != unlock.key or unlock.work \
            or not lock_value or unlock_value != 0:
        return None
    return lock


def _run_once_loop(text: str, vocab: Vocabulary, depth: int) -> bool:
    """Is text exactly `for (INIT; COND; STEP)` running its body once, with no lock call?"""
    tokens = tokenize(text)
    if len(tokens) < 4 or tokens[0].text != "for" or tokens[1].text != "(" \
            or matching_bracket(tokens, 1) != len(tokens) - 1 or lock_calls(text, vocab, depth + 1):
        return False
    clauses = top_level_split(text[tokens[1].end : tokens[-1].start], ";")
    return len(clauses) == 3 and _runs_once(*clauses, vocab)


def _runs_once(init: str, cond: str, step: str, vocab: Vocabulary) -> bool:
    """Does `for (init; cond; step) body` run body exactly once (a flag init sets, step flips)?"""
    flag = _flag_test(cond)
    if flag is None:
        return False
    name, true_when_zero = flag
    first = _assigned(init, name, vocab)
    if first is None:
        return False
    then = _stepped(step, name, first)
    return then is not None and (first == 0) == true_when_zero and (then == 0) != true_when_zero


def _flag_test(cond: str) -> tuple[str, bool] | None:
    """(flag, whether cond is true when it is 0) for `!f`, `f == 0`, `f`, `f != 0`, `(...)`."""
    tokens = tokenize(cond)
    texts = [t.text for t in tokens]
    if len(tokens) > 2 and texts[0] == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        return _flag_test(cond[tokens[1].start : tokens[-1].start])
    if len(texts) == 1 and tokens[0].kind == "ident":
        return texts[0], False
    if len(texts) == 2 and texts[0] == "!" and tokens[1].kind == "ident":
        return texts[1], True
    if len(texts) == 3 and texts[1] in ("==", "!=") and texts[2] == "0" and tokens[0].kind == "ident":
        return texts[0], texts[1] == "=="
    return None


def _assigned(init: str, name: str, vocab: Vocabulary) -> int | None:
    """The value `[TYPE] name = VALUE` gives name in a for's first clause: an integer literal, the
    last operand of a parenthesised comma expression, or a lock call's result (0: the runtime
    aborts rather than fail)."""
    for part in top_level_split(init, ","):
        tokens = tokenize(part)
        eq = next((i for i, t in enumerate(tokens) if t.text == "="), -1)
        if eq > 0 and tokens[eq - 1].text == name:
            return _value(part[tokens[eq].end :], vocab)
    return None


def _value(expr: str, vocab: Vocabulary) -> int | None:
    tokens = tokenize(expr)
    if len(tokens) == 1 and tokens[0].kind == "number":
        try:
            return int(tokens[0].text.rstrip("uUlL"), 0)
        except ValueError:
            return None
    if len(tokens) > 2 and tokens[0].text == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        return _value(top_level_split(expr[tokens[1].start : tokens[-1].start], ",")[-1], vocab)
    op = classify(expr, vocab)
    return 0 if op is not None and op.kind == "lock" else None


def _stepped(step: str, name: str, before: int) -> int | None:
    """name's value after a for's third clause, from `name = LITERAL`, `name++`, `++name`, `name--`..."""
    value = None
    for part in top_level_split(step, ","):
        texts = [t.text for t in tokenize(part)]
        if texts in ([name, "++"], ["++", name]):
            value = (before if value is None else value) + 1
        elif texts in ([name, "--"], ["--", name]):
            value = (before if value is None else value) - 1
        elif len(texts) == 3 and texts[:2] == [name, "="]:
            try:
                value = int(texts[2].rstrip("uUlL"), 0)
            except ValueError:
                return None
        elif name in texts:
            return None
    return value
