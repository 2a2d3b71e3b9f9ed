"""`GUARD(m);` (lock_statements.guard_lock): a `__attribute__((cleanup))` variable that holds the
lock to the end of its block.  The section is the rest of the block (region_at); a return,
break, continue or goto out of it is an exit (the cleanup unlocks there), a return's value
computed in the section.  Its section and call site are written as a plain region's."""

import clang.cindex as ci

from rclify.ctext.cparse import statement_range as stmt_range
from rclify.ctext.tokens import tokenize
from rclify.transform.region_checks import finish_region
from rclify.transform.lock_statements.guards import guard_lock
from rclify.transform.refusals import Reason
from rclify.transform.region_walk import RegionAnalysis
from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, StatementAt

K = ci.CursorKind


class Guard(Shape):
    name = "guard"
    fixture = "cleanup_guard"

    def applies(self, region: Region) -> bool:
        return region.started_by == self.name

    def region_at(self, at: StatementAt) -> Region | None:
        """The region of a guard's declaration: to its block's `}`."""
        stmt, parsed, children, i = at.statement, at.parsed, at.children, at.i
        if at.op is not None or stmt.kind != K.DECL_STMT:
            return None
        start, lock_end = stmt_range(parsed, stmt)
        guard = guard_lock(parsed.text(start, lock_end), at.vocab)
        if guard is None:
            return None
        body_end = at.compound.extent.end.offset - 1  # the block's `}`
        region = Region(parsed, at.function, at.compound, guard.op, start, lock_end, body_end, body_end,
                        stmt.extent.start.line)
        region.body_end_stmt = body_end
        analysis = RegionAnalysis(parsed, at.vocab, guard.op.key, guard=(lock_end, body_end))
        region.ends_by_exit = not analysis.block(children[i + 1 :], is_switch_body=False) and bool(analysis.exits)
        if any(c.kind in (K.CASE_STMT, K.DEFAULT_STMT) for c in children[i + 1 :]):
            analysis.refuse(Reason.LABEL_IN_REGION, region.line)
        uses = [t for t in tokenize(parsed.text(lock_end, body_end)) if t.text == guard.variable]
        if uses or guard.release.work:  # the variable disappears with the section; work needs it
            analysis.refuse(Reason.CLEANUP_GUARD, region.line)
        if any(e.value for e in analysis.exits) and "(anonymous" in at.function.result_type.spelling:
            analysis.refuse(Reason.CLEANUP_GUARD, region.line)  # no variable can hold the value
        finish_region(region, analysis)
        return region


SHAPE = Guard()
