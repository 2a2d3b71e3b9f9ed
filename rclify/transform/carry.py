"""Carrying a user's edits of a transformed file back onto its original (a three-way merge).

Three texts of one file: the original (O, rclify's backup), what rclify wrote (W) and what the
file holds now (C).  The user's edits are the differences W -> C; carry() replays each on O and
returns O' = the original with the user's edits, which a new transform then transforms whole.

An edit can be replayed only where we know which original text it touches:

  - O and W are aligned line by line (difflib, no heuristics).  Lines W copied unchanged from O
    are anchors; what lies between two anchors is a *gap*: original lines rclify rewrote (a lock
    type, an initializer, a critical region replaced by its call) and the generated lines that
    replaced them.  Generated functions (critical sections, accessors) are kept out of the
    alignment, so they are always gaps, with no original lines of their own.  Runs of anchors made
    only of blank or brace lines are not trusted (a generated `}` can equal an original one).
  - An edit of anchored lines edits those original lines.  An edit may also cover gaps, but only
    whole ones: it then replaces the original lines of those gaps too (deleting a function that
    had an extracted section deletes its section).  An edit of part of a gap cannot be replayed.
  - An insertion between two lines goes to the matching place of O: after the original of an
    anchor, or before/after the original lines of a gap it borders.  An insertion inside a gap,
    or beside a gap made only of deleted original lines (before or after them?), cannot.
  - Inside the body of a generated critical-section function, lines are anchored by provenance:
    the body's `#line N` says which original line each comes from, and a line equal to that
    original line is an anchor.  Edits of such lines, and insertions next to them, replay inside
    the original region.
  - Text the user added must not name rclify's or the runtime's identifiers (rclify_*, rcl_*,
    RCL_*, RCLIFY_*): the original code knows nothing of them.

Whatever cannot be replayed raises Unmappable naming the first line of C concerned; the caller
refuses the whole re-transform, so an edit is never put somewhere it was not meant to go.
"""

import difflib
import re
from dataclasses import dataclass

_WORD = re.compile(r"\w")
_RCLIFY_NAME = re.compile(r"\b(?:rclify_\w+|rcl_\w+|RCLIFY_\w+|RCL_\w+)")
_GENERATED_START = "/* rclify: "  # first line of every generated function (templates/extract/)
_CS_SIGNATURE = re.compile(r"^static int rclify_cs_\w+\(void \*rclify_arg\)$")
_LINE_DIRECTIVE = re.compile(r"^#line (\d+)\s*$")


class Unmappable(Exception):
    def __init__(self, line: int, why: str):
        super().__init__(f"line {line}: {why}")
        self.line, self.why = line, why


def lines(text: str) -> list[str]:
    """Lines with their ends, split on '\\n' only (a form feed or a lone '\\r' stays in its line)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _trivial(line: str) -> bool:
    return not _WORD.search(line) or _LINE_DIRECTIVE.match(line) is not None


@dataclass
class _Piece:
    """A stretch of W and the stretch of O it stands for: line for line, or a gap."""

    w0: int
    w1: int
    o0: int
    o1: int
    same: bool


@dataclass
class _Edit:
    o0: int
    o1: int
    new: list[str]
    order: int  # position in W, to keep insertions at one point in the user's order
    c_line: int  # first line of C concerned, for messages


def generated_blocks(w: list[str]) -> list[tuple[int, int]]:
    """[start, end) of each generated function: from its `/* rclify: ` comment to the `}` after
    its final `return ...;`."""
    blocks, i = [], 0
    while i < len(w):
        if w[i].startswith(_GENERATED_START):
            end = next((k for k in range(i + 1, len(w)) if w[k].rstrip("\n") == "}"
                        and w[k - 1].startswith("    return ")), None)
            if end is not None:
                blocks.append((i, end + 1))
                i = end + 1
                continue
        i += 1
    return blocks


def _section_bodies(w: list[str], o: list[str], blocks) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """Provenance anchors {W index: O index} inside critical-section bodies, and the bodies'
    [start, end) in W (from the line after the body's first `#line` to the final `return 0;`)."""
    anchors, bodies = {}, []
    for start, end in blocks:
        sig = next((k for k in range(start, end) if _CS_SIGNATURE.match(w[k].rstrip("\n"))), None)
        first = next((k for k in range(sig, end) if _LINE_DIRECTIVE.match(w[k])), None) if sig else None
        if first is None:
            continue
        body0, body1 = first + 1, end - 2  # w[end-2] is the final "    return 0;"
        claim = None
        for k in range(first, body1):
            directive = _LINE_DIRECTIVE.match(w[k])
            if directive:
                claim = int(directive.group(1)) - 1
                continue
            if 0 <= claim < len(o) and o[claim] == w[k] and not _trivial(w[k]):
                anchors[k] = claim
            claim += 1
        bodies.append((body0, body1))
    return anchors, bodies


def _pieces(o: list[str], w: list[str], blocks) -> list[_Piece]:
    masked = list(w)
    for start, end in blocks:
        for k in range(start, end):
            masked[k] = f"\0generated {k}"
    matcher = difflib.SequenceMatcher(None, o, masked, autojunk=False)
    pieces, wi, oi = [], 0, 0
    for a, b, size in matcher.get_matching_blocks():
        if size == 0 or all(_trivial(line) for line in o[a:a + size]):
            continue
        if b > wi or a > oi:
            pieces.append(_Piece(wi, b, oi, a, False))
        pieces.append(_Piece(b, b + size, a, a + size, True))
        wi, oi = b + size, a + size
    if wi < len(w) or oi < len(o):
        pieces.append(_Piece(wi, len(w), oi, len(o), False))
    return pieces


class _Aligned:
    """O and W aligned; maps a W range or insertion point to the O range it stands for."""

    def __init__(self, o: list[str], w: list[str]):
        blocks = generated_blocks(w)
        self.w, self.blocks, self.o_len = w, blocks, len(o)
        self.pieces = _pieces(o, w, blocks)
        self.body_anchor, self.bodies = _section_bodies(w, o, blocks)

    def _blank(self, a: int, b: int) -> bool:
        """W[a:b] holds no code: blank lines and #line directives only."""
        return all(not self.w[k].strip() or _LINE_DIRECTIVE.match(self.w[k]) for k in range(a, b))

    def _generated_only(self, a: int, b: int) -> bool:
        """W[a:b] is whole generated functions and blank lines."""
        k = a
        while k < b:
            block = next(((s, e) for s, e in self.blocks if s == k and e <= b), None)
            if block:
                k = block[1]
            elif self._blank(k, k + 1):
                k += 1
            else:
                return False
        return True

    def _beside_generated_function(self, i: int) -> bool:
        """Between a generated function's end and i, or i and its start, only blank lines."""
        return any((e <= i and self._blank(e, i)) or (s >= i and self._blank(i, s)) for s, e in self.blocks)

    def _body(self, i1: int, i2: int) -> tuple[int, int] | None:
        return next(((b0, b1) for b0, b1 in self.bodies if b0 <= i1 and i2 <= b1), None)

    def range(self, i1: int, i2: int, c_line: int) -> tuple[int, int]:
        """The O lines that W[i1:i2] (replaced or deleted by the user) stands for."""
        if self._body(i1, i2):
            mapped = [self.body_anchor.get(k) for k in range(i1, i2)]
            if None in mapped or mapped != list(range(mapped[0], mapped[0] + len(mapped))):
                raise Unmappable(c_line, "edits a line of a critical section that rclify rewrote")
            return mapped[0], mapped[-1] + 1
        o_range = None
        for p in self.pieces:
            inside = (p.w0 < i2 and p.w1 > i1) if p.w0 < p.w1 else i1 < p.w0 < i2
            if not inside:
                continue
            lo, hi = max(i1, p.w0), min(i2, p.w1)
            if p.same:
                part = (p.o0 + lo - p.w0, p.o0 + hi - p.w0)
            elif self._blank(p.w0, lo) and self._blank(hi, p.w1):  # all of the gap that is code
                part = (p.o0, p.o1)
            elif p.o0 == p.o1 and self._generated_only(lo, hi):  # whole generated functions, blanks
                part = (p.o0, p.o0)
            else:
                raise Unmappable(c_line, "edits part of the code rclify generated or rewrote")
            o_range = part if o_range is None else (o_range[0], part[1])
        return o_range

    def point(self, i: int, c_line: int) -> int:
        """Where in O a text inserted before W[i] goes."""
        body = self._body(i, i)
        if body:
            if i - 1 >= body[0] and i - 1 in self.body_anchor:
                return self.body_anchor[i - 1] + 1
            if i < body[1] and i in self.body_anchor:
                return self.body_anchor[i]
            raise Unmappable(c_line, "inserts into a critical section next to a line rclify rewrote")
        for p in self.pieces:
            if p.w0 < i < p.w1:
                if p.same:
                    return p.o0 + i - p.w0
                if self._blank(p.w0, i):  # only blank lines and #line between the gap's start and here
                    return p.o0
                if self._blank(i, p.w1):
                    return p.o1
                if p.o0 == p.o1 and self._beside_generated_function(i):  # at file scope
                    return p.o0
                raise Unmappable(c_line, "inserts into the code rclify generated or rewrote")
            if p.w0 == p.w1 == i:
                raise Unmappable(c_line, "inserts where rclify removed original lines (before or after them?)")
            if p.w0 == i:
                return p.o0
        return self.o_len


def _slides(w: list[str], i1: int, i2: int, new: list[str]):
    """The equivalent places of a pure insertion or deletion, nearest first: inserting "}\\nX\\n"
    before a "}" is inserting "X\\n}\\n" after it.  (i1, i2, new) for each."""
    yield i1, i2, new
    if (i1 < i2) == bool(new):  # a replacement has one place
        return
    n, block = i2 - i1, new or w[i1:i2]
    down, up = [], []
    a, moved = i1, list(block)
    while a + n < len(w) and w[a + n] == moved[0]:
        a, moved = a + 1, moved[1:] + moved[:1]
        down.append((a, a + n, moved if new else []))
    a, moved = i1, list(block)
    while a > 0 and w[a - 1] == moved[-1]:
        a, moved = a - 1, moved[-1:] + moved[:-1]
        up.append((a, a + n, moved if new else []))
    for pair in zip(down, up):
        yield from pair
    yield from down[len(up):] + up[len(down):]


def _replay(aligned: "_Aligned", w: list[str], i1: int, i2: int, new: list[str], c_line: int) -> _Edit:
    """The edit W[i1:i2] -> new as an edit of O, at the first of its equivalent places that maps."""
    first_error = None
    for a, b, text in _slides(w, i1, i2, new):
        try:
            o0, o1 = aligned.range(a, b, c_line) if a < b else (aligned.point(a, c_line),) * 2
            return _Edit(o0, o1, text, a, c_line)
        except Unmappable as err:
            first_error = first_error or err
    raise first_error


def carry(original: str, written: str, current: str) -> str:
    """O': the original with the user's edits (W -> C) replayed; raises Unmappable."""
    o, w, c = lines(original), lines(written), lines(current)
    aligned = _Aligned(o, w)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, w, c, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        new = c[j1:j2]
        for k, text in enumerate(new):
            if name := _RCLIFY_NAME.search(text):
                raise Unmappable(j1 + k + 1, f"the new code names {name.group()}, which only transformed code knows")
        edits.append(_replay(aligned, w, i1, i2, new, j1 + 1))
    edits.sort(key=lambda e: (e.o0, e.o1, e.order))
    out, at = [], 0
    for edit in edits:
        if edit.o0 < at:
            raise Unmappable(edit.c_line, "two edits meet in the same original lines")
        out += o[at:edit.o0] + edit.new
        at = edit.o1
    return "".join(out + o[at:])
