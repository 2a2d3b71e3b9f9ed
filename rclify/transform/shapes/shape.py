"""What a region shape is (see the package)."""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rclify.transform.regions import Region

if TYPE_CHECKING:  # render.py imports the shapes
    from rclify.transform.render import FileRenderer


@dataclass
class Writing:
    """One region's extraction being written (render.FileRenderer._extract): what a shape reads."""

    renderer: "FileRenderer"  # its text helpers: render_range, line, code_line, or_original
    region: Region
    edits: list[tuple[int, int, str]]  # every replacement in the section's range
    exit_edits: list[tuple[int, int, str]]  # of those, the exits'
    hoists: list = field(default_factory=list)  # hoisting.Hoist of the region
    indent: str = ""  # of the lock statement's line
    function: str = ""  # the name of the function the region is in
    number: int = 0  # the region's, among its function's sections (rclify_cs_<function>_<number>)
    returned: str = ""  # the variable a value returned under a lock guard goes through ("": none)
    outer_hoisted: set = field(default_factory=set)  # starts of hoists an enclosing region declares


class Shape:
    """An idiom's rendering; a subclass overrides what its idiom changes."""

    name = ""  # as the report's region records list it ("shapes")
    fixture = ""  # tests/fixtures/extract/<fixture>/: an input that has a region of this shape

    def applies(self, region: Region) -> bool:
        raise NotImplementedError

    def body(self, writing: Writing) -> str | None:
        """The section's text (None: the default, the region's own text with its edits)."""
        return None

    def call_site(self, writing: Writing, call: str) -> str:
        """The call site as this idiom needs it, around call (the rendered call and dispatch)."""
        return call
