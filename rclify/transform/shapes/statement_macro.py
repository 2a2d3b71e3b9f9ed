"""A statement macro whose expansion is the section: `JOB_LOCKED(e);` where JOB_LOCKED locks,
works and unlocks.  Its region is the whole invocation (region_at, asked by region_bounds.py's
walk through STARTS; the expansion is read by macro_sections.py).  The section's text is the expansion's; the
call site is one statement, as the invocation was (`if (e) JOB_LOCKED(e);`), between what the
invocation's line held before and after it."""

import clang.cindex as ci

from rclify.ctext.cparse import statement_range
from rclify.ctext.tokens import tokenize
from rclify.transform.lock_statements.calls import lock_calls
from rclify.transform.macro_sections import expanded_section
from rclify.transform.refusals import Reason
from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, StatementAt, Writing

K = ci.CursorKind


class StatementMacro(Shape):
    name = "statement-macro"
    fixture = "macro_statement_section"
    claims_statement = True  # the expansion's own statements are the section's, not regions again

    def applies(self, region: Region) -> bool:
        return region.expansion is not None

    def region_at(self, at: StatementAt) -> Region | None:
        """`WITH_LOCK(m, x++);`: a statement macro whose expansion locks, runs its argument and
        unlocks.  The section is the expansion's (macro_sections.py): the region covers the whole
        invocation; one that cannot be expanded for sure stays hybrid (section-in-macro).  An `if`
        is never one (a trylock's, or another idiom's, as the walk always read it)."""
        if at.op is not None or at.statement.kind == K.IF_STMT:
            return None
        parsed, vocab, stmt = at.parsed, at.vocab, at.statement
        start, end = statement_range(parsed, stmt)
        tokens = tokenize(parsed.text(start, end))
        if not tokens or tokens[0].text not in vocab.macros:
            return None
        ops = lock_calls(parsed.text(start, end), vocab)
        lock = next((o for i, o in enumerate(ops) if o.kind == "lock"
                     and any(u.kind == "unlock" and u.key == o.key for u in ops[i + 1:])), None)
        if lock is None:
            return None
        region = Region(parsed, at.function, at.compound, lock, start, end, end, end, stmt.extent.start.line)
        expansion = expanded_section(parsed, vocab, at.function, start, end, lock.key)
        if expansion is None:
            region.refuse(Reason.SECTION_IN_MACRO, region.line)
            return region
        # the whole invocation is the region's body: what walks its nodes (thread-local state) sees
        # P and Q too, which only makes it more careful
        region.lock, region.lock_end, region.body_end_stmt = expansion.lock, start, end
        region.end_result, region.end_work = expansion.unlock.result, expansion.unlock.work
        region.end_work_of = expansion.unlock.wrapper if expansion.unlock.work else None
        region.expansion = expansion
        return region

    def body(self, writing: Writing) -> str:
        return f"\n{writing.region.expansion.body}\n"

    def call_site(self, writing: Writing, call: str) -> str:
        before, after = writing.region.expansion.before, writing.region.expansion.after
        return f"{{ {before}{' ' if before else ''}{call}{' ' + after if after else ''} }}"


SHAPE = StatementMacro()
