"""A lock macro defined as a lock under some #if conditions only (zstd's DEBUGLEVEL): the
section exists under them, the original text (its macros as defined) elsewhere."""

from rclify.ctext.preprocessor import condition_expression
from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, Writing


class ConditionalMacro(Shape):
    name = "conditional-macro"
    fixture = "conditional_macro_lock"

    def applies(self, region: Region) -> bool:
        return bool(region.lock.conditions)

    def call_site(self, writing: Writing, call: str) -> str:
        test = " && ".join(f"({condition_expression(c)})" for c in writing.region.lock.conditions)
        return writing.renderer.or_original(writing.region, f"#if {test}", call)


SHAPE = ConditionalMacro()
