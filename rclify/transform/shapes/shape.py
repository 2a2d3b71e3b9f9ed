"""What a region shape is (see the package): where its regions start and end (region_at,
regions_in, asked by region_bounds.py's walk through shapes.STARTS) and how its section and call
site are written (applies, body, call_site, conditions, asked by render.py through SHAPES), from
what it read of the region (data, keep: its own dataclass in Region.shape_data)."""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.transform.regions import Region, unlabeled
from rclify.transform.vocabulary import LockOp, Vocabulary

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


@dataclass
class StatementAt:
    """A statement of a block, as region_bounds.py's walk asks the shapes whether a region starts
    there (Shape.region_at): children[i] of compound, in function."""

    parsed: ParsedFile
    vocab: Vocabulary
    function: ci.Cursor
    compound: ci.Cursor  # the block
    children: list[ci.Cursor]  # its statements
    i: int
    op: LockOp | None  # the statement read as one lock operation (lock_statements.classify), or None
    in_function_body: bool  # compound is the function's own body

    @property
    def statement(self) -> ci.Cursor:
        """children[i] without its labels (`out: lock(&m);`, `case 1: ...`)."""
        return unlabeled(self.children[self.i])

    @property
    def following(self) -> list[ci.Cursor]:
        """The block's statements after it: where a region started here goes on (RegionAnalysis
        walks them: region_walk.py, region_close.py)."""
        return self.children[self.i + 1 :]


class Shape:
    """An idiom: where its regions start and end, how they are written; a subclass overrides what
    its idiom changes."""

    name = ""  # as the report's region records list it ("shapes")
    fixture = ""  # tests/fixtures/extract/<fixture>/: an input that has a region of this shape
    # its region's first statement is the whole region (a statement macro's invocation): the walk
    # reads none of the statements inside it again (a lock statement's are never read again)
    claims_statement = False

    def region_at(self, at: StatementAt) -> Region | None:
        """The region of this idiom that starts at the statement (it may end at any later statement
        of the block: at.following), with its problems; None when none starts there.  Any
        statement may start one, a lock statement (at.op) or not (an `if`, a `for`, a declaration);
        the walk asks the shapes of STARTS in order and takes the first region one returns."""
        return None

    def regions_in(self, parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor,
                   body: ci.Cursor) -> list[Region]:
        """The regions of this idiom that the statement walk cannot see, found over the whole
        function (body: its block) once the walk is done: those starting at a statement that is
        no block's statement (an if's or a loop's body)."""
        return []

    def applies(self, region: Region) -> bool:
        raise NotImplementedError

    def data(self, region: Region):
        """What this shape read of the region for its own rendering (its module's dataclass,
        kept by keep), or None: regions.py says why it is one slot of the region."""
        return region.shape_data.get(self.name)

    def keep(self, region: Region, data: object) -> None:
        """Keeps data, what this shape read of the region, for its own rendering (data)."""
        region.shape_data[self.name] = data

    def conditions(self, region: Region) -> list[str]:
        """The #if lines the section's struct and function exist under, asked where the shape
        applies (render.py, after the region's own #if guards, before its lock macro's)."""
        return []

    def body(self, writing: Writing) -> str | None:
        """The section's text (None: the default, the region's own text with its edits)."""
        return None

    def call_site(self, writing: Writing, call: str) -> str:
        """The call site as this idiom needs it, around call (the rendered call and dispatch)."""
        return call

    def run(self, writing: Writing, locked: str, unlocked: str) -> str:
        """The expression that runs the section and gives its flag, as this idiom needs it: locked
        runs it through the runtime with its lock held, unlocked calls the section's function
        directly, on this thread, holding nothing."""
        return locked
