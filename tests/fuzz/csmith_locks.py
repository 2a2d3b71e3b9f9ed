"""Csmith programs with lock regions inserted around random statement ranges.

Csmith (Debian `csmith`) writes deterministic single-threaded programs that print a checksum of all
their globals, full of pointers to locals, structs, unions, bit-fields, `volatile` and `goto`.  We
parse one with libclang and wrap random ranges of whole statements of one block in
`pthread_mutex_lock(&fz_mN)` .. `pthread_mutex_unlock(&fz_mN)`, each range its own mutex (Csmith's
call graph has no recursion, so no region can take its own lock twice).  A range keeps the original
correct: every jump leaving it (`return`, a `goto` to a label outside it, a `break`/`continue` of a
loop outside it) gets the unlocks of the ranges it leaves in front of it (`{ unlock; return x; }`:
the early exits the transform extracts), and a range is never chosen when a label inside it is the
target of a goto from outside it (the lock would be skipped).
"""

from __future__ import annotations

import random
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import clang.cindex as ci

from rclify.ctext.cparse import _gcc_include_dir

CSMITH_INCLUDE = "/usr/include/csmith"
CSMITH_OPTIONS = ["--max-funcs", "5", "--max-block-size", "4", "--max-block-depth", "3"]
K = ci.CursorKind
LOOPS = {K.FOR_STMT, K.WHILE_STMT, K.DO_STMT}


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


def csmith_source(seed: int) -> str:
    # in a directory of its own: csmith writes platform.info into its working directory
    with tempfile.TemporaryDirectory(prefix="rclify-csmith-") as scratch:
        return subprocess.run(["csmith", "--seed", str(seed), *CSMITH_OPTIONS], capture_output=True,
                              text=True, check=True, timeout=60, cwd=scratch).stdout


def _stmt_end(data: bytes, end: int) -> int:
    """The offset after a statement whose extent ends at end: its `;` included."""
    i = end
    while i < len(data) and data[i:i + 1] in (b" ", b"\t", b"\n"):
        i += 1
    return i + 1 if data[i:i + 1] == b";" else end


def _walk(cur: ci.Cursor, loops: list[ci.Cursor], out: dict) -> None:
    """Collects blocks, jumps with their target loop, labels and gotos of one function body."""
    kind = cur.kind
    if kind == K.COMPOUND_STMT:
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
    inner = loops + [cur] if kind in LOOPS or kind == K.SWITCH_STMT else loops
    for child in cur.get_children():
        _walk(child, inner, out)


def _inside(c: ci.Cursor | None, start: int, end: int) -> bool:
    return c is not None and start <= c.extent.start.offset and c.extent.end.offset <= end


def insert_locks(path: Path, rng: random.Random, density: float = 0.35, max_regions: int = 12) -> int:
    """Rewrites path (a Csmith program) with lock regions; returns how many."""
    data = path.read_bytes()
    tu = ci.Index.create().parse(str(path), args=["-x", "c", "-std=gnu11", "-isystem", _gcc_include_dir(),
                                                  f"-I{CSMITH_INCLUDE}", "-w"])
    ranges: list[Range] = []
    for fn in tu.cursor.get_children():
        if fn.kind != K.FUNCTION_DECL or not fn.is_definition() or fn.location.file is None \
                or Path(fn.location.file.name) != path.resolve():
            continue
        body = next((c for c in fn.get_children() if c.kind == K.COMPOUND_STMT), None)
        if body is None:
            continue
        info = {"blocks": [], "jumps": [], "gotos": [], "cases": []}
        _walk(body, [], info)
        mine: list[Range] = []
        for block in info["blocks"]:
            stmts = list(block.get_children())
            if not stmts or rng.random() > density:
                continue
            for _ in range(2):
                i = rng.randrange(len(stmts))
                j = min(len(stmts) - 1, i + rng.choice((0, 0, 1, 2, 3, 5, 8)))
                start = stmts[i].extent.start.offset
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
    jumps_all = []
    for fn in tu.cursor.get_children():
        if fn.kind == K.FUNCTION_DECL and fn.is_definition() and fn.location.file is not None \
                and Path(fn.location.file.name) == path.resolve():
            info = {"blocks": [], "jumps": [], "gotos": [], "cases": []}
            for c in fn.get_children():
                if c.kind == K.COMPOUND_STMT:
                    _walk(c, [], info)
            jumps_all.extend(info["jumps"])
    for n, r in enumerate(sorted(ranges, key=lambda r: r.start)):
        r.mutex = f"fz_m{n}"
        r.style = rng.choice(("direct", "direct", "macro", "checked"))
    for jump, target in jumps_all:
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
    decls = "\n#include <pthread.h>\n#include <stdlib.h>\n#define FZ_LOCK(m) pthread_mutex_lock(m)\n" + "".join(
        f"static pthread_mutex_t fz_m{n} = PTHREAD_MUTEX_INITIALIZER;\n" for n in range(len(ranges)))
    anchor = text.find(b'#include "csmith.h"')
    anchor = text.find(b"\n", anchor) + 1
    text = text[:anchor] + decls.encode() + text[anchor:]
    path.write_bytes(text)
    return len(ranges)


def _lock(r: Range) -> str:
    return {"direct": f"pthread_mutex_lock(&{r.mutex});",
            "macro": f"FZ_LOCK(&{r.mutex});",
            "checked": f"if (pthread_mutex_lock(&{r.mutex}) != 0) abort();"}[r.style]


def _unlock(r: Range) -> str:
    return f"pthread_mutex_unlock(&{r.mutex});"
