"""A lock taken and released under the same flag: `if (c) lock(&m); ... if (c) unlock(&m);` in one
block (a pool that is shared or private, a library's thread-safe mode chosen at start-up).  Its
region starts at the `if` that locks and ends at the `if` that unlocks (region_at); the call site
evaluates c once and runs the section through the runtime when it holds, or calls the section's
function directly, holding nothing, when it does not (run).  Why that is sound, and what is left
hybrid (lock-under-condition): docs/transform.md, "Locks taken under a flag"."""

from dataclasses import dataclass

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range
from rclify.ctext.cursors import child_nodes
from rclify.ctext.tokens import Token, identifiers_used, matching_bracket, normalize, tokenize
from rclify.pthread_api import WAITS
from rclify.transform.region_checks import finish_region
from rclify.transform.lock_statements.calls import classify
from rclify.transform.lock_statements.expansion import enclosed_statement, invocation_body, statement_tokens
from rclify.transform.refusals import Reason
from rclify.transform.region_walk import HELD, RegionAnalysis
from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, StatementAt, Writing
from rclify.transform.vocabulary import LockOp, Vocabulary

K = ci.CursorKind

# calls a condition may make and still read nothing but its operands
_PURE_CALLS = {"__builtin_expect", "likely", "unlikely", "LIKELY", "UNLIKELY", "sizeof"}
_WRITES = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"}


@dataclass
class FlagReading:
    """What a flag-conditional region's call site needs (Shape.data): the flag."""

    flag: str  # c's text, evaluated once at the call site (run)


class FlagConditional(Shape):
    name = "flag-conditional"
    fixture = "flag_conditional_lock"
    claims_statement = True  # `if (c) { lock(&m); }`: its block's lock is this region's

    def applies(self, region: Region) -> bool:
        return region.started_by == self.name

    def run(self, writing: Writing, locked: str, unlocked: str) -> str:
        return f"(({self.data(writing.region).flag}) ? {locked} : {unlocked})"

    def region_at(self, at: StatementAt) -> Region | None:
        if at.op is not None or at.children[at.i].kind == K.LABEL_STMT:
            return None
        parsed, vocab = at.parsed, at.vocab
        start, lock_end = statement_range(parsed, at.children[at.i])
        flag, lock = _flag_and_op(parsed.text(start, lock_end), vocab, "lock")
        if lock is None:
            return None
        close = _closing_if(parsed, vocab, at.children, at.i, flag, lock)
        if close is None:
            return None
        body_end, end = statement_range(parsed, at.children[close])
        unlock = _flag_and_op(parsed.text(body_end, end), vocab, "unlock")[1]
        region = Region(parsed, at.function, at.compound, lock, start, lock_end, body_end, end,
                        at.children[at.i].extent.start.line)
        region.body_end_stmt = end
        self.keep(region, FlagReading(flag))
        region.end_result, region.end_work = unlock.result, unlock.work
        region.end_work_of = unlock.wrapper if unlock.work else None
        statements = at.children[at.i + 1 : close]
        analysis = RegionAnalysis(parsed, vocab, lock.key)
        states = analysis.block(statements, is_switch_body=False)
        if states != {HELD} or analysis.exits or analysis.problems \
                or _flag_may_change(parsed, flag, region, statements):
            analysis.refuse(Reason.LOCK_UNDER_CONDITION, region.line, first=True)
        finish_region(region, analysis)
        return region


SHAPE = FlagConditional()


def _flag_and_op(text: str, vocab: Vocabulary, kind: str, depth: int = 0) -> tuple[str, LockOp | None]:
    """`if (c) S` without an else, where S is a lock statement of that kind (braced or not): c's
    text and S's lock op; read through `do { } while (0)`, braces and statement macros
    (`#define USING(d) if (d->locking) pthread_mutex_lock(&d->m);`, expanded as the preprocessor
    does: c is then the expansion's text, which the call site evaluates where the invocation
    was).  ("", None) for any other statement."""
    tokens = statement_tokens(text, depth)
    if not tokens:
        return "", None
    first = tokens[0].text
    inner = enclosed_statement(tokens, text)  # `{ S }`, `do { S } while (0)`
    if inner is None and first in vocab.macros and not vocab.macros[first].conditions:
        # a macro defined under an #if is not read so: its other definitions may not lock under a flag
        if [t.text for t in tokens[1:]] == ["(", ")"] and not vocab.macros[first].params:
            inner = vocab.macros[first].body  # git's `read_sha1_lock()`: `X()` is no call of a statement
        else:
            inner = invocation_body(vocab.macros[first], tokens, text, parenthesize=False)
    if inner is not None:
        return _flag_and_op(inner, vocab, kind, depth + 1)
    if len(tokens) < 4 or first != "if" or tokens[1].text != "(":
        return "", None
    close = matching_bracket(tokens, 1)
    if close < 3 or any(t.text == "else" for t in tokens[close + 1 :]):
        return "", None
    op = classify(text[tokens[close].end :], vocab)
    flag = text[tokens[2].start : tokens[close].start].strip()
    return (flag, op) if op is not None and op.kind == kind else ("", None)


def _closing_if(parsed: ParsedFile, vocab: Vocabulary, children: list[ci.Cursor], i: int, flag: str,
                lock: LockOp) -> int | None:
    """The index of the first later statement of the block that is `if (flag) unlock(<lock>);`."""
    for j in range(i + 1, len(children)):
        other, op = _flag_and_op(parsed.text(*statement_range(parsed, children[j])), vocab, "unlock")
        if op is not None and op.key == lock.key and normalize(other) == normalize(flag):
            return j
    return None


def _flag_may_change(parsed: ParsedFile, flag: str, region: Region, statements: list[ci.Cursor]) -> bool:
    """Whether c may not keep its value from the lock to the unlock, as far as the text shows: c
    calls a function or writes, the section writes or takes the address of what c reads (or of
    what holds it: `p` for `p->shared`) or declares a name c reads (the closing `if` would read
    it), or waits on a condvar (with c false it would wait holding nothing)."""
    flag_tokens = _without_parenthesized_names(tokenize(flag))
    if any(t.text in _WRITES for t in flag_tokens) or any(a.text.isidentifier() and b.text == "("
                                                          and a.text not in _PURE_CALLS
                                                          for a, b in zip(flag_tokens, flag_tokens[1:])):
        return True
    body = parsed.text(region.lock_end, region.body_end)
    if identifiers_used(body) & WAITS:
        return True
    read = _paths(flag_tokens)
    declared = {d.spelling for s in statements if s.kind == K.DECL_STMT for d in child_nodes(s)}
    return bool(declared & {r[0] for r in read}) \
        or any(_overlap(w, r) for w in _written_paths(_without_parenthesized_names(tokenize(body))) for r in read)


def _without_parenthesized_names(tokens: list[Token]) -> list[Token]:
    """tokens without the parentheses around a lone name (`(p)->shared`, a macro argument as the
    preprocessor substituted it, is `p->shared`); a call's `f(p)` keeps them."""
    out: list[Token] = []
    k = 0
    while k < len(tokens):
        if tokens[k].text == "(" and k + 2 < len(tokens) and tokens[k + 1].text.isidentifier() \
                and tokens[k + 2].text == ")" and not (out and (out[-1].text.isidentifier() or out[-1].text in ")]")):
            out.append(tokens[k + 1])
            k += 3
        else:
            out.append(tokens[k])
            k += 1
    return out


def _written_paths(tokens: list[Token]) -> list[tuple[str, ...]]:
    """The access path of every operand that is assigned, incremented, decremented or has its
    address taken (`p->items` is ("p", "items"), `*q` ("q", "*"), `a[i]` ("a", "[]"))."""
    written = []
    for k, tok in enumerate(tokens):
        if tok.text in _WRITES:  # every path of the left operand (`int x = 0`: int and x)
            written += _paths(_operand(tokens, k, -1))
            if tok.text in ("++", "--"):
                written += _paths(_operand(tokens, k, 1))
        elif tok.text == "&" and (k == 0 or not (tokens[k - 1].text.isidentifier() or tokens[k - 1].text in ")]")):
            written.append(_path(_operand(tokens, k, 1)))  # unary &: the address taken
    return [w for w in written if w]


def _paths(tokens: list[Token]) -> list[tuple[str, ...]]:
    """The access path starting at each identifier that is no member name."""
    return [path for k, t in enumerate(tokens) if t.text.isidentifier()
            and (k == 0 or tokens[k - 1].text not in (".", "->")) and (path := _path(tokens[k:]))]


_ENDS = {";", ",", "{", "}", "?", ":", "return"} | _WRITES


def _operand(tokens: list[Token], k: int, step: int) -> list[Token]:
    """The tokens of the operand next to tokens[k], in direction step, in source order."""
    opening, closing = ("(", "[") if step > 0 else (")", "]"), (")", "]") if step > 0 else ("(", "[")
    depth, j, found = 0, k + step, []
    while 0 <= j < len(tokens):
        text = tokens[j].text
        depth += (text in opening) - (text in closing)
        if depth < 0 or (depth == 0 and text in _ENDS):
            break
        found.append(tokens[j])
        j += step
    return found if step > 0 else found[::-1]


def _path(tokens: list[Token]) -> tuple[str, ...]:
    """The access path an operand starts with: its first identifier, then each member and
    subscript; a leading `*` (the pointee) ends it with "*"."""
    texts = [t.text for t in tokens]
    k, deref = 0, False
    while k < len(texts) and texts[k] in ("*", "("):
        deref, k = deref or texts[k] == "*", k + 1
    if k >= len(texts) or not texts[k].isidentifier():
        return ()
    path = [texts[k]]
    k += 1
    while k < len(texts):
        if texts[k] in (".", "->") and k + 1 < len(texts) and texts[k + 1].isidentifier():
            path.append(texts[k + 1])
            k += 2
        elif texts[k] == "[":
            close = matching_bracket(tokens, k)
            if close < 0:
                break
            path.append("[]")
            k = close + 1
        else:
            break
    return tuple(path + ["*"] * deref)


def _overlap(written: tuple[str, ...], read: tuple[str, ...]) -> bool:
    """Whether writing one access path may change the other: one is a prefix of the other, a
    subscript or a pointee matching any component."""
    return all(a == b or "*" in (a, b) or "[]" in (a, b) for a, b in zip(written, read))
