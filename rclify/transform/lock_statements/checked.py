"""Checked lock statements: a lock call whose result is tested, the failure path ending the program.

    if (pthread_mutex_lock(&m) != 0) abort();    checked result with a no-return failure path
    if (lock_mutex(m) != 0) return (ERR);        ... or one that returns an error (Berkeley DB's repmgr)
    assert(pthread_mutex_lock(&m) == 0);         ... through assert (libusb's PTHREAD_CHECK)
    pthread_mutex_lock(&m) && (abort(), 0);      ... through && / || (lbzip2's xlock)
    err = pthread_mutex_lock(&m);                the result kept (0 in the caller)
    err = lock(&m); if (err) die();              the test of that result, on the next statement (checks_result)
The runtime aborts when it cannot lock: the failure path could only run on a broken mutex, and is
dropped, whatever it does (ends the program, logs, returns an error).
"""

from collections.abc import Callable
from dataclasses import replace

from rclify.ctext.tokens import Token, matching_bracket, pretty, split_args, tokenize, top_level_split
from rclify.transform.lock_statements.expansion import MAX_EXPANSION_DEPTH, joined, substitute, unwrapped
from rclify.transform.vocabulary import LockOp, Vocabulary

# calls.classify, handed in rather than imported: it dispatches to these forms (calls.py imports this
# module), and they read the call inside with it
Classify = Callable[[str, Vocabulary, int], LockOp | None]


def classify_checked(tokens: list[Token], text: str, vocab: Vocabulary, depth: int,
                     classify: Classify) -> LockOp | None:
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
    if len(top_level_split(text[tokens[close + 1].start : tokens[-1].end], ";")) > 1:
        return None  # more statements after the failure branch (a block's `if (..) abort(); x++; ...`)
    found = _failure_test(text[tokens[2].start : tokens[close - 1].end], vocab, depth + 1, classify) \
        if close > 2 else None
    if found is None or not found[1]:
        return None
    return replace(found[0], checked=True)


def classify_asserted(test: str, vocab: Vocabulary, depth: int, classify: Classify) -> LockOp | None:
    """`assert(CALL == 0)` (libusb's `PTHREAD_CHECK(pthread_mutex_lock(m))` through `ASSERT_EQ`):
    the lock call is made and its failure ends in __assert_fail, which does not return, so the
    failure path is dropped as for `if (FAILED) abort();`.  Only a test true when the call
    succeeded.  Under NDEBUG assert expands to nothing and no lock call is left: libclang's
    statement then holds no call and is never read as a lock statement (may_be_lock)."""
    found = _failure_test(test, vocab, depth + 1, classify)
    if found is None or found[1]:
        return None
    return replace(found[0], checked=True)


def classify_or_die(text: str, vocab: Vocabulary, depth: int, classify: Classify) -> LockOp | None:
    """`FAILED && (abort(), 0)`, `SUCCEEDED || die()`: a lock call whose failure runs only a call
    that does not return (lbzip2's `#define xlock(m) ((void)(pthread_mutex_lock(m) && (abort(), 0)))`);
    the failure path is dropped as for `if (FAILED) abort();`."""
    for operator, when_failed in (("&&", True), ("||", False)):
        parts = top_level_split(text, operator)
        if len(parts) != 2:
            continue
        found = _failure_test(parts[0], vocab, depth + 1, classify)
        if found is not None and found[1] == when_failed and _dies(parts[1]):
            return replace(found[0], checked=True)
    return None


# Calls that do not return: a failure path made of one ends there.
NO_RETURN = {"exit", "_exit", "_Exit", "abort", "quick_exit", "pthread_exit", "err", "errx", "verr",
             "verrx", "longjmp", "siglongjmp", "__assert_fail", "__builtin_trap", "__builtin_unreachable"}


def _dies(expr: str) -> bool:
    """Does expr (a comma expression, parenthesised or not) call a function that does not return?"""
    tokens = tokenize(expr)
    while len(tokens) > 2 and tokens[0].text == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        expr = expr[tokens[1].start : tokens[-1].start]
        tokens = tokenize(expr)
    for part in top_level_split(expr, ","):
        tokens = tokenize(part)
        if len(tokens) >= 3 and tokens[0].text in NO_RETURN and tokens[1].text == "(" \
                and matching_bracket(tokens, 1) == len(tokens) - 1:
            return True
    return False


def _failure_test(text: str, vocab: Vocabulary, depth: int, classify: Classify) -> tuple[LockOp, bool] | None:
    """(the lock operation in an if-condition, whether the condition is true when it FAILED),
    following `!`, `!= 0`, `== 0`, parentheses and expression macros (only these count towards the
    expansion depth); None for anything else."""
    tokens = tokenize(text)
    if not tokens or depth > MAX_EXPANSION_DEPTH:
        return None
    if tokens[0].text == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        return _failure_test(text[tokens[1].start : tokens[-2].end], vocab, depth, classify) \
            if len(tokens) > 2 else None
    if tokens[0].text == "!":
        inner = _failure_test(text[tokens[1].start :], vocab, depth, classify) if len(tokens) > 1 else None
        return (inner[0], not inner[1]) if inner else None
    # `CALL != 0`, `CALL == (0)` (a macro's parameter substituted in parentheses)
    zero = len(tokens) - 1 if tokens[-1].text == "0" else len(tokens) - 3 \
        if len(tokens) > 4 and [t.text for t in tokens[-3:]] == ["(", "0", ")"] else -1
    if zero > 1 and tokens[zero - 1].text in ("!=", "=="):
        inner = _failure_test(text[: tokens[zero - 1].start], vocab, depth, classify)
        return (inner[0], inner[1] == (tokens[zero - 1].text == "!=")) if inner else None
    macro = vocab.macros.get(tokens[0].text)
    if macro is not None and macro.params and len(tokens) > 2 and tokens[1].text == "(" \
            and matching_bracket(tokens, 1) == len(tokens) - 1:
        body = substitute(macro.body, macro.params, split_args(text[tokens[1].end : tokens[-1].start]))
        inner = _failure_test(body, vocab, depth + 1, classify) if body is not None else None
        if inner is not None:
            return replace(inner[0], mutex=unwrapped(pretty(inner[0].mutex)), via=macro.name,
                           conditions=joined(macro.conditions, inner[0].conditions)), inner[1]
    op = classify(text, vocab, depth)
    if op is None or op.kind in ("trylock", "timedlock"):
        return None
    return op, True  # the call's value (or `v = CALL`'s): nonzero when it failed


def classify_assigned(tokens: list[Token], text: str, vocab: Vocabulary, depth: int,
                      classify: Classify) -> LockOp | None:
    """v = CALL;  TYPE v = CALL;  — the variable then holds 0 (success) in the caller."""
    eq = next((i for i, t in enumerate(tokens) if t.text == "="), -1)
    if eq < 1 or tokens[eq - 1].kind != "ident" or not all(t.kind == "ident" or t.text == "*" for t in tokens[:eq]):
        return None
    op = classify(text[tokens[eq + 1].start : tokens[-1].end], vocab, depth + 1) if eq + 1 < len(tokens) else None
    if op is None or op.kind in ("trylock", "timedlock"):
        return None
    result = text[tokens[0].start : tokens[eq].start].strip() + " = 0;"
    return replace(op, checked=True, result=result)


def checks_result(text: str, op: LockOp) -> bool:
    """`err = lock(&m); if (err) ...;`: is text (the statement after op's) a test, with no else, of
    the variable op's result went to, true only when the call failed (`if (err)`, `if (err != 0)`,
    `if (__builtin_expect(err, 0))`)?  The runtime aborts when it cannot lock: that test's branch
    never runs."""
    if not op.result:
        return False
    var = op.result.split("=")[0].split()[-1].lstrip("*")
    tokens = tokenize(text)
    if len(tokens) < 4 or tokens[0].text != "if" or tokens[1].text != "(":
        return False
    close = matching_bracket(tokens, 1)
    if close < 0 or close == len(tokens) - 1 or any(t.text == "else" for t in tokens[close + 1 :]):
        return False
    return _tests_nonzero(text[tokens[2].start : tokens[close].start], var)


def _tests_nonzero(cond: str, var: str) -> bool:
    """Is cond `var` (true exactly when it is nonzero), through `!= 0`, `!!`, parentheses and
    __builtin_expect(_, 0)?"""
    tokens = tokenize(cond)
    texts = [t.text for t in tokens]
    if texts == [var]:
        return True
    if not tokens:
        return False
    if texts[0] == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        return _tests_nonzero(cond[tokens[1].start : tokens[-1].start], var)
    if texts[:2] == ["!", "!"]:
        return _tests_nonzero(cond[tokens[2].start :], var)
    if texts[-2:] == ["!=", "0"]:
        return _tests_nonzero(cond[: tokens[-2].start], var)
    if texts[:2] == ["0", "!="]:
        return _tests_nonzero(cond[tokens[2].start :], var)
    if texts[:2] == ["__builtin_expect", "("] and matching_bracket(tokens, 1) == len(tokens) - 1:
        args = split_args(cond[tokens[1].end : tokens[-1].start])
        return len(args) == 2 and args[1].strip() == "0" and _tests_nonzero(args[0], var)
    return False
