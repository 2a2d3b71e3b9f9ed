"""A statement macro whose expansion is the section (macro_sections.py): `JOB_LOCKED(e);` where
JOB_LOCKED locks, works and unlocks.  The section's text is the expansion's; the call site is one
statement, as the invocation was (`if (e) JOB_LOCKED(e);`), between what the invocation's line
held before and after it."""

from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, Writing


class StatementMacro(Shape):
    name = "statement-macro"
    fixture = "macro_statement_section"

    def applies(self, region: Region) -> bool:
        return region.expansion is not None

    def body(self, writing: Writing) -> str:
        return f"\n{writing.region.expansion.body}\n"

    def call_site(self, writing: Writing, call: str) -> str:
        before, after = writing.region.expansion.before, writing.region.expansion.after
        return f"{{ {before}{' ' if before else ''}{call}{' ' + after if after else ''} }}"


SHAPE = StatementMacro()
