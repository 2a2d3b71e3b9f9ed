"""Timed locks (pthread_mutex_timedlock, _clocklock: they may fail with ETIMEDOUT): never
extracted, whatever their shape, so no region shape (shapes/) covers them and no extraction
fixture can show one.  Each call no region starts with is a region of its own statement,
refused (timedlock), so that the report names it; region_bounds.py asks for them last, once
every other region of the function is known (a call inside one of those is its region's).
"""

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.cursors import child_nodes
from rclify.ctext.tokens import matching_bracket, normalize, tokenize
from rclify.transform.lock_statements.calls import classify
from rclify.transform.refusals import Reason
from rclify.transform.regions import Region, unlabeled
from rclify.transform.vocabulary import TIMED_LOCKS, LockOp, Vocabulary

K = ci.CursorKind


def timed_lock_regions(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, body: ci.Cursor,
                        regions: list[Region]) -> list[Region]:
    """pthread_mutex_timedlock / _clocklock calls in any shape no region starts with (`if
    (pthread_mutex_timedlock(&m, &ts) == 0) {...}`, `rc = ...`, a loop condition, a macro): each is
    a region of its own statement, refused (timedlock) so that the report names the call.  The
    runtime's rcl_mutex_timedlock takes the lock in hybrid mode; nothing is extracted around it
    (its failure path, ETIMEDOUT, is ordinary control flow the caller runs)."""
    found: list[Region] = []

    def visit(node: ci.Cursor, compound: ci.Cursor | None, stmt: ci.Cursor | None) -> None:
        for child in child_nodes(node):
            here, top = (node, child) if node.kind == K.COMPOUND_STMT else (compound, stmt)
            if child.kind == K.CALL_EXPR and child.spelling in TIMED_LOCKS and top is not None:
                at = child.extent.start.offset
                if not any(r.start <= at < max(r.lock_end, r.start + 1) for r in [*regions, *found]):
                    found.append(_timed_region(parsed, vocab, function, here, unlabeled(top), child))
            visit(child, here, top)

    visit(body, None, None)
    return found


def _timed_region(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, compound: ci.Cursor,
                  stmt: ci.Cursor, call: ci.Cursor) -> Region:
    start, end = stmt_range(parsed, stmt)
    mutex = _timed_mutex(parsed, vocab, call, parsed.text(start, end))
    op = LockOp("timedlock", mutex, normalize(mutex))
    region = Region(parsed, function, compound, op, start, end, end, end, call.extent.start.line)
    region.body_end_stmt = end
    region.refuse(Reason.TIMEDLOCK, region.line)
    return region


def _timed_mutex(parsed: ParsedFile, vocab: Vocabulary, call: ci.Cursor, statement: str) -> str:
    """The mutex argument of a timed lock call as written; for a call inside a macro expansion
    (its arguments located at the invocation), the lock macro's own expansion says it."""
    args = list(call.get_arguments())
    if args and args[0].extent.start.offset != call.extent.start.offset:
        return parsed.text(args[0].extent.start.offset, args[0].extent.end.offset).strip()
    tokens = tokenize(statement)
    for i, tok in enumerate(tokens[:-1]):
        if tok.text in vocab.macros and tokens[i + 1].text == "(":
            close = matching_bracket(tokens, i + 1)
            op = classify(statement[tok.start : tokens[close].end], vocab) if close > 0 else None
            if op is not None and op.kind == "timedlock":
                return op.mutex
    return ""
