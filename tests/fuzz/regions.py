"""Lock regions inserted around random statement ranges of a C file's functions.

Shared by the fuzzer's sources that bring their own single-threaded programs (Csmith,
csmith_locks.py; GCC's torture suite, torture.py).  We parse the file with libclang and wrap
random ranges of whole statements of one block in `pthread_mutex_lock(&fz_mN)` ..
`pthread_mutex_unlock(&fz_mN)`, each range its own mutex.  A range keeps the program correct:
every jump leaving it (`return`, a `goto` to a label outside it, a `break`/`continue` of a loop
outside it) gets the unlocks of the ranges it leaves in front of it (`{ unlock; return x; }`: the
early exits the transform extracts), and a range is never chosen when a label inside it is the
target of a goto from outside it (the lock would be skipped) or a case label of a switch.

Never chosen either, because the wrapped text would no longer mean the same program: the block
of a statement expression (its last statement is its value), a function that takes a label's
address or jumps through one (`&&lbl`, `goto *p`: a jump no unlock can be put in front of), and
a block whose statements come from a macro's expansion (their extents overlap, or are the
invocation's: the lock would land in the macro's text or around the invocation).  What a range
still cannot know (a recursive call taking its own lock again, a `longjmp` out of it) is caught
by the caller running the program with its regions before the transform.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import clang.cindex as ci

K = ci.CursorKind
LOOPS = {K.FOR_STMT, K.WHILE_STMT, K.DO_STMT}
COMPUTED_JUMPS = {K.ADDR_LABEL_EXPR, K.INDIRECT_GOTO_STMT}
STMT_EXPR = K.from_id(121)  # GNU `({ ... })`: spelled StmtExpr, not STMT_EXPR, in the bindings


class ParseErrors(Exception):
    """libclang could not parse the file (GNU nested functions, say): its tree is not the program."""


@dataclass
class Range:
    block: ci.Cursor
    first: int  # index of the first statement in block's children
    last: int
    start: int  # byte offsets in the file
    end: int
    mutex: str = ""
    style: str = "direct"
    jumps: list = field(default_factory=list)


@dataclass(frozen=True)
class Prelude:
    """What goes in front of the file's first region: the headers (and declarations) the lock
    statements need, after the line holding `after` (or at the top when it is empty)."""
    headers: str
    after: bytes = b""


def _stmt_end(data: bytes, end: int) -> int:
    """The offset after a statement whose extent ends at end: its `;` included."""
    i = end
    while i < len(data) and data[i:i + 1] in (b" ", b"\t", b"\n"):
        i += 1
    return i + 1 if data[i:i + 1] == b";" else end


def _stmt_start(data: bytes, start: int) -> int:
    """The offset of a statement whose extent starts at start: a leading `__extension__` (which
    libclang leaves out of a declaration's extent) included."""
    i = start
    while i > 0 and data[i - 1:i] in (b" ", b"\t", b"\n"):
        i -= 1
    word = b"__extension__"
    return i - len(word) if data[max(0, i - len(word)):i] == word else start


def _walk(cur: ci.Cursor, loops: list[ci.Cursor], out: dict, parent: ci.Cursor | None = None) -> None:
    """Collects blocks, jumps with their target loop, labels and gotos of one function body."""
    kind = cur.kind
    if kind == K.COMPOUND_STMT:
        if parent is None or parent.kind != STMT_EXPR:
            out["blocks"].append(cur)
    elif kind in (K.RETURN_STMT,):
        out["jumps"].append((cur, None))
    elif kind in (K.BREAK_STMT, K.CONTINUE_STMT):
        target = next((lp for lp in reversed(loops) if kind == K.CONTINUE_STMT and lp.kind in LOOPS
                       or kind == K.BREAK_STMT), None)
        out["jumps"].append((cur, target))
    elif kind == K.GOTO_STMT:
        ref = next((c.referenced for c in cur.get_children() if c.kind == K.LABEL_REF), None)
        out["jumps"].append((cur, ref))
        out["gotos"].append((cur, ref))
    elif kind in (K.CASE_STMT, K.DEFAULT_STMT):
        out["cases"].append(cur)
    elif kind in COMPUTED_JUMPS:
        out["computed"] = True
    inner = loops + [cur] if kind in LOOPS or kind == K.SWITCH_STMT else loops
    for child in cur.get_children():
        _walk(child, inner, out, cur)


def _inside(c: ci.Cursor | None, start: int, end: int) -> bool:
    return c is not None and start <= c.extent.start.offset and c.extent.end.offset <= end


def _spelled_in_place(data: bytes, block: ci.Cursor, stmts: list[ci.Cursor]) -> bool:
    """Are the block and its statements written in the file as they are parsed (not expanded from
    a macro: a macro's statements all have the invocation's extent, or overlap)?"""
    if data[block.extent.start.offset:block.extent.start.offset + 1] != b"{":
        return False
    prev = block.extent.start.offset
    for s in stmts:
        start, end = s.extent.start.offset, s.extent.end.offset
        if not prev < start < end:
            return False
        prev = end - 1
    return True


def _functions(tu: ci.TranslationUnit, path: Path):
    """The file's function definitions with their bodies' blocks, jumps, gotos and cases."""
    for fn in tu.cursor.get_children():
        if fn.kind != K.FUNCTION_DECL or not fn.is_definition() or fn.location.file is None \
                or Path(fn.location.file.name) != path.resolve():
            continue
        body = next((c for c in fn.get_children() if c.kind == K.COMPOUND_STMT), None)
        if body is None:
            continue
        info = {"blocks": [], "jumps": [], "gotos": [], "cases": [], "computed": False}
        _walk(body, [], info)
        yield info


def insert_locks(path: Path, rng: random.Random, parse_args: list[str], prelude: Prelude,
                 density: float = 0.35, max_regions: int = 12) -> int:
    """Rewrites path with lock regions; returns how many.  Raises ParseErrors when libclang
    reports an error in the file."""
    data = path.read_bytes()
    tu = ci.Index.create().parse(str(path), args=["-x", "c", *parse_args])
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        raise ParseErrors(f"{errors[0].location.line}: {errors[0].spelling}")
    functions = list(_functions(tu, path))
    ranges: list[Range] = []
    for info in functions:
        if info["computed"]:
            continue
        mine: list[Range] = []
        for block in info["blocks"]:
            stmts = list(block.get_children())
            if not stmts or not _spelled_in_place(data, block, stmts) or rng.random() > density:
                continue
            for _ in range(2):
                i = rng.randrange(len(stmts))
                j = min(len(stmts) - 1, i + rng.choice((0, 0, 1, 2, 3, 5, 8)))
                start = _stmt_start(data, stmts[i].extent.start.offset)
                end = _stmt_end(data, stmts[j].extent.end.offset)
                if any(not (r.end <= start or end <= r.start or (r.start <= start and end <= r.end)
                            or (start <= r.start and r.end <= end)) for r in mine):
                    continue  # partial overlap
                if any(r.start == start and r.end == end for r in mine):
                    continue
                # a label inside targeted from outside; a case label of a switch outside
                if any(_inside(ref, start, end) and not _inside(g, start, end) for g, ref in info["gotos"]):
                    continue
                if any(_inside(c, start, end) for c in info["cases"]):
                    continue
                mine.append(Range(block, i, j, start, end))
                break
        ranges.extend(mine)
    rng.shuffle(ranges)
    ranges = ranges[:max_regions]
    # every jump leaving ranges gets their unlocks, innermost first
    # (offset, rank, text), rank the textual order at one offset: a jump's closing brace, the
    # ranges' unlocks innermost first, their locks outermost first, a jump's opening brace
    edits: list[tuple[int, tuple, str]] = []
    for n, r in enumerate(sorted(ranges, key=lambda r: r.start)):
        r.mutex = f"fz_m{n}"
        r.style = rng.choice(("direct", "direct", "macro", "checked"))
    for jump, target in (j for info in functions for j in info["jumps"]):
        js, je = jump.extent.start.offset, _stmt_end(data, jump.extent.end.offset)
        left = [r for r in ranges if r.start <= js and je <= r.end
                and (jump.kind == K.RETURN_STMT or not _inside(target, r.start, r.end))]
        if not left:
            continue
        left.sort(key=lambda r: r.end - r.start)  # innermost first
        unlocks = " ".join(_unlock(r) for r in left)
        edits.append((js, (3, 0), "{ " + unlocks + " "))
        edits.append((je, (0, 0), " }"))
    for r in ranges:
        edits.append((r.start, (2, r.start - r.end), _lock(r) + " "))
        edits.append((r.end, (1, r.end - r.start), " " + _unlock(r)))
    text = data
    for off, _, s in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:off] + s.encode() + text[off:]
    decls = prelude.headers + "#define FZ_LOCK(m) pthread_mutex_lock(m)\n" + "".join(
        f"static pthread_mutex_t fz_m{n} = PTHREAD_MUTEX_INITIALIZER;\n" for n in range(len(ranges)))
    anchor = 0
    if prelude.after:
        anchor = text.find(b"\n", text.find(prelude.after)) + 1
    text = text[:anchor] + decls.encode() + text[anchor:]
    path.write_bytes(text)
    return len(ranges)


def _lock(r: Range) -> str:
    return {"direct": f"pthread_mutex_lock(&{r.mutex});",
            "macro": f"FZ_LOCK(&{r.mutex});",
            "checked": f"if (pthread_mutex_lock(&{r.mutex}) != 0) abort();"}[r.style]


def _unlock(r: Range) -> str:
    return f"pthread_mutex_unlock(&{r.mutex});"
