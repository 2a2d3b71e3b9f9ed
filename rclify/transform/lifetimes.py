"""Scope and lifetime: every object a section creates keeps its storage duration, its scope and
the point where its lifetime ends (docs/transform.md, "Scope and lifetime").

A section's statements run in another function: an automatic object created there lives in that
function's frame, and its lifetime ends (its cleanup attribute runs) when the section returns,
not where its block ends in the caller.  Both are the same point when the object's block ends
inside the section and the section cannot return while the object is in scope.  The section
returns to its caller early at an exit (the unlock before a tail), at a window and at a
loop-carried section's release (returns_while_alive()); and at its end when the block goes on
after it (the region's home block, a bare block the section ends in: goes_on()).  There:
  - a local whose address is taken (aliasing.py) or which has a cleanup attribute, declared in
    the home block or the bare block, is hoisted (hoisting.py): declared in the caller where the
    section is called, its attributes kept, so its lifetime and its cleanup end with its block
    as before; where it cannot be (a block nested in the section, a declaration after an exit),
    a cleanup local refuses the region (Reason.CLEANUP_LOCAL);
  - a compound literal whose address is taken refuses the region
    (Reason.COMPOUND_LITERAL_OUTLIVES_SECTION): check_literals();
  - a `static` local has static storage wherever it is declared: it needs nothing (hoisted
    verbatim when used after the section: hoisting.py).
"""

import clang.cindex as ci

from rclify.ctext.cursors import preorder, top_level
from rclify.transform import aliasing
from rclify.transform.refusals import Reason, Refusal
from rclify.transform.regions import Region

K = ci.CursorKind
# a block in C99's sense: a compound statement, a selection or iteration statement (and its body)
_BLOCKS = (K.COMPOUND_STMT, K.IF_STMT, K.SWITCH_STMT, K.FOR_STMT, K.WHILE_STMT, K.DO_STMT)


def early_returns(region: Region) -> list[int]:
    """Where the section returns to its caller before its end: its exits' unlocks, its windows'
    unlocks, a loop-carried section's release."""
    points = [e.unlock_start for e in region.exits] + [w.unlock_start for w in region.windows]
    return points + ([region.loop.released[0]] if region.loop is not None else [])


def returns_while_alive(region: Region, block: ci.Cursor, start: int) -> bool:
    """Does the section return to its caller early (early_returns) inside block after start,
    where something of block is declared?"""
    return any(start < at < block.extent.end.offset for at in early_returns(region))


def goes_on(region: Region, block: ci.Cursor) -> bool:
    """Does block go on after the section's end, in the caller: the home block (whose unlock ends
    the section), a bare block the section ends in, or one enclosing them?  A lock guard's block
    ends with the guard's own cleanup, which unlocks after every later declaration's (shapes/guard.py)."""
    if region.started_by == "guard" and block == region.compound:
        return False
    if region.open_block is not None and block == region.open_block:
        return True
    return block.extent.end.offset > region.body_end


def check_literals(region: Region) -> None:
    """Refuses a section creating a compound literal whose address may be taken (`&(struct rec){
    ... }`, an array literal) in a block the section may return from while the literal lives:
    after the section its storage, in the section's frame, is gone (in C it lasts to the end of
    its block).  A literal used as a value (copied, passed, a member read) takes no address."""
    nodes = [n for n in preorder(region.home) if region.lock_end <= n.extent.start.offset < region.body_end]
    literals = [n for n in nodes if n.kind == K.COMPOUND_LITERAL_EXPR]
    if not literals:
        return
    addressed = aliasing.addressed_literals(region.home)
    tails = region.unlocked_spans()
    for literal in literals:
        at = literal.extent.start.offset
        if at not in addressed or any(a <= at < b for a, b in tails):
            continue  # a value, or in code the caller runs
        block = innermost_block(nodes + [region.home], at)
        if goes_on(region, block) or returns_while_alive(region, block, at):
            raise Refusal(Reason.COMPOUND_LITERAL_OUTLIVES_SECTION)


def innermost_block(candidates: list[ci.Cursor], at: int) -> ci.Cursor:
    """The innermost block (C99's: a compound, selection or iteration statement) of candidates
    around offset at."""
    around = [n for n in candidates if n.kind in _BLOCKS and n.extent.start.offset <= at < n.extent.end.offset]
    return min(around, key=lambda n: n.extent.end.offset - n.extent.start.offset)


def attributes(parsed, var: ci.Cursor) -> list[str]:
    """A variable's attributes as it is declared (`__attribute__((cleanup(f)))`, or the macro that
    stands for one: systemd's `_cleanup_free_`), written so that they may open a declaration."""
    out = []
    for child in var.get_children():
        if not child.kind.is_attribute():
            continue
        start, end = child.extent.start.offset, child.extent.end.offset
        text = parsed.text(start, end).strip()
        before = parsed.data[:start].rstrip()
        if before.endswith((b"((", b",")):  # inside __attribute__((...)): the attribute alone
            out.append(f"__attribute__(({text}))")
        else:  # a macro's invocation standing for the whole attribute
            out.append(text)
    return out


def has_cleanup(parsed, var: ci.Cursor) -> bool:
    """Does a variable have a cleanup attribute (spelled, or through a macro whose expansion
    libclang shows as the attribute at the macro's invocation)?"""
    return any(child.kind.is_attribute() and _is_cleanup(parsed, child) for child in var.get_children())


def _is_cleanup(parsed, attribute: ci.Cursor) -> bool:
    """libclang gives the cleanup attribute no kind of its own: its tokens are the attribute as
    written (`cleanup(f)`, `__cleanup__(f)`) or a macro's invocation (`AUTO(f)`, `_cleanup_free_`),
    whose definitions (the unit's, followed through the macros they name) say."""
    words = [t.spelling for t in attribute.get_tokens()]
    seen: set[str] = set()
    while words:
        if any(w in ("cleanup", "__cleanup__") for w in words):
            return True
        names = [w for w in words if w not in seen and w in macros_by_name(parsed)]
        seen.update(names)
        words = [w for name in names for w in macros_by_name(parsed)[name][1:]]
    return False


def macros_by_name(parsed) -> dict[str, list[str]]:
    """The unit's macro definitions, each as its tokens (the last definition of a name)."""
    cache = getattr(parsed.tu, "_rclify_macro_tokens", None)
    if cache is None:
        listed = top_level(parsed.tu)
        rows = {d.name: d.row for d in listed.macro_definitions}
        cache = _MacroTokens(listed, rows)
        parsed.tu._rclify_macro_tokens = cache
    return cache


class _MacroTokens(dict):
    """name -> tokens of its definition, read on first use (a unit has thousands)."""

    def __init__(self, listed, rows: dict[str, int]):
        super().__init__()
        self._listed, self._rows = listed, rows

    def __contains__(self, name) -> bool:
        return name in self._rows

    def __missing__(self, name: str) -> list[str]:
        tokens = [t.spelling for t in self._listed.cursor(self._rows[name]).get_tokens()]
        self[name] = tokens
        return tokens
