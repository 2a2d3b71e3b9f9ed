"""`WITH_LOCK(m) { ... }` (lock_statements.scoped_lock, regions.scoped_statement): a `for` that
locks in its first clause and unlocks in its third.  The section is the body (a block's
statements, or the one statement): region_at where the `for` is a block's statement,
regions_in where it is an if's or a loop's body (`if (c) WITH_LOCK(m) x++;`), which the walk
over blocks does not see.  Its section and call site are written as a plain region's."""

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.cursors import child_nodes
from rclify.transform.region_checks import finish_region
from rclify.transform.refusals import Reason
from rclify.transform.region_walk import RELEASED, RegionAnalysis
from rclify.transform.regions import Region, scoped_statement
from rclify.transform.shapes.shape import Shape, StatementAt
from rclify.transform.vocabulary import Vocabulary

K = ci.CursorKind


class Scoped(Shape):
    name = "scoped"
    fixture = "macro_scoped_for"

    def applies(self, region: Region) -> bool:
        return region.started_by == self.name

    def region_at(self, at: StatementAt) -> Region | None:
        if at.op is not None:
            return None
        return _scoped_region(at.parsed, at.vocab, at.function, at.compound, at.statement)

    def regions_in(self, parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor,
                   body: ci.Cursor) -> list[Region]:
        """Scoped lock statements that are no block's statement, but an if's or a loop's body;
        their home is the nearest enclosing block."""
        found: list[Region] = []
        in_block = (K.COMPOUND_STMT, K.LABEL_STMT, K.CASE_STMT, K.DEFAULT_STMT)  # the block walk sees those

        def visit(node: ci.Cursor, compound: ci.Cursor) -> None:
            here = node if node.kind == K.COMPOUND_STMT else compound
            for child in child_nodes(node):
                if child.kind == K.FOR_STMT and node.kind not in in_block:
                    region = _scoped_region(parsed, vocab, function, here, child)
                    if region is not None:
                        found.append(region)
                visit(child, here)

        visit(body, body)
        return found


SHAPE = Scoped()


def _scoped_region(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, compound: ci.Cursor,
                   stmt: ci.Cursor) -> Region | None:
    """The region of the scoped lock statement stmt (None: it is not one).  A `continue` of its
    `for` is an early exit (the third clause unlocks, the loop ends), a `break` leaves with the
    lock held."""
    scoped = scoped_statement(parsed, stmt, vocab)
    if scoped is None:
        return None
    op, body, loop = scoped
    start, end = stmt_range(parsed, stmt)
    if body.kind == K.COMPOUND_STMT:
        lock_end, body_end, end = body.extent.start.offset + 1, body.extent.end.offset - 1, body.extent.end.offset
        statements = child_nodes(body)
    else:
        lock_end, (_, body_end) = body.extent.start.offset, stmt_range(parsed, body)
        end = body_end
        statements = [body]
    region = Region(parsed, function, compound, op, start, lock_end, body_end, end, stmt.extent.start.line)
    region.body_end_stmt = end
    analysis = RegionAnalysis(parsed, vocab, op.key, scope=loop, scope_breaks_release=loop is not stmt)
    states = analysis.block(statements, is_switch_body=False)
    if RELEASED in states:
        analysis.refuse(Reason.UNBALANCED_REGION, region.line)  # the third clause unlocks again
    finish_region(region, analysis)
    return region
