"""`if (pthread_mutex_trylock(&m) == 0) { ...; unlock; ... } [else ...]`: the section is the
then-block up to its unlock (region_at; region_close.py walks to it); the rest of the then-block
and the else branch run in the caller, told by the section whether it got the lock (render.py's
call site, paper Algorithm 3)."""

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.cursors import child_nodes
from rclify.ctext.tokens import tokenize
from rclify.transform.region_close import close
from rclify.transform.lock_statements.calls import classify
from rclify.transform.refusals import Reason
from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, StatementAt
from rclify.transform.vocabulary import LockOp, Vocabulary

K = ci.CursorKind


class Trylock(Shape):
    name = "trylock"
    fixture = "trylock_then_else"

    def applies(self, region: Region) -> bool:
        return region.is_trylock

    def region_at(self, at: StatementAt) -> Region | None:
        """The region of an `if` whose condition is a trylock's success and whose then-branch is a
        block; region.after: the then-block after the section, region.otherwise: the else branch."""
        if at.op is not None or at.statement.kind != K.IF_STMT:
            return None
        parsed, if_stmt = at.parsed, at.statement
        children = child_nodes(if_stmt)
        if len(children) < 2 or children[1].kind != K.COMPOUND_STMT:
            return None
        op = _trylock_condition(parsed, children[0], at.vocab)
        if op is None:
            return None
        then = children[1]
        start, end = stmt_range(parsed, if_stmt)
        open_brace = then.extent.start.offset + 1
        region = Region(parsed, at.function, at.compound, op, start, open_brace, open_brace, end,
                        if_stmt.extent.start.line, is_trylock=True)
        close(parsed, at.vocab, region, child_nodes(then), Reason.UNBALANCED_REGION)
        # what stays in the caller: the then-block after the section, and the else branch
        region.after = (region.body_end_stmt, then.extent.end.offset - 1)
        if len(children) > 2:
            region.otherwise = stmt_range(parsed, children[2])
        region.end = end
        return region


SHAPE = Trylock()


def _trylock_condition(parsed: ParsedFile, cond: ci.Cursor, vocab: Vocabulary) -> LockOp | None:
    """The trylock of `trylock(&m) == 0`, `0 == trylock(&m)`, `!trylock(&m)`; else None."""
    tokens = tokenize(parsed.text(cond.extent.start.offset, cond.extent.end.offset))
    texts = [t.text for t in tokens]
    if texts[-2:] == ["==", "0"]:
        call = tokens[:-2]
    elif texts[:2] == ["0", "=="]:
        call = tokens[2:]
    elif texts[:1] == ["!"]:
        call = tokens[1:]
    else:
        return None
    if not call:
        return None
    op = classify(parsed.text(cond.extent.start.offset + call[0].start, cond.extent.start.offset + call[-1].end), vocab)
    return op if op is not None and op.kind == "trylock" else None
