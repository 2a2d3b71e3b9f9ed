"""`va_start(ap, x); v = va_arg(ap, T); va_end(ap);` inside a region (lifted_reads, asked by
region_close.py when it closes a region): a va_list cannot be read in another function, so the
reads run in the caller before the lock, written just before the call."""

import re

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range
from rclify.ctext.cursors import preorder
from rclify.ctext.tokens import identifiers_used
from rclify.transform.region_walk import RegionAnalysis
from rclify.transform.regions import Region, no_return_call
from rclify.transform.shapes.shape import Shape, Writing

K = ci.CursorKind
VA = {"va_start", "va_arg", "va_end", "va_copy", "__builtin_va_start", "__builtin_va_arg", "__builtin_va_end"}


class VariadicReads(Shape):
    name = "variadic-reads"
    fixture = "variadic_reads"

    def applies(self, region: Region) -> bool:
        return region.lifted is not None

    def call_site(self, writing: Writing, call: str) -> str:
        region, renderer = writing.region, writing.renderer
        return (f"{renderer.parsed.text(*region.lifted).strip()}\n#line {renderer.line(region.start)}\n"
                f"{writing.indent}{call}")


SHAPE = VariadicReads()


_VA_START = re.compile(r"va_start\(\w+,\w+\);")
_VA_ARG = re.compile(r"\w+=va_arg\(\w+,[\w\s*]+\);")
_VA_END = re.compile(r"va_end\(\w+\);")


def lifted_reads(parsed: ParsedFile, region: Region, analysis: RegionAnalysis,
                 following: list[ci.Cursor]) -> tuple[int, int] | None:
    """`va_start(ap, last); x = va_arg(ap, T); ... va_end(ap);` among the region's own statements
    (libmicrohttpd's MHD_set_connection_option): reading the function's own arguments into its
    locals touches nothing another thread sees, so these statements may run before the lock
    (va_start cannot move into the section's function).  Their span when every path of the
    region reaches them (no exit, return or goto before) and nothing before them in the region
    uses the va_list or the locals they set; else None (the region stays hybrid: va_list)."""
    spans = [statement_range(parsed, c) for c in following if c.extent.start.offset < region.body_end]
    texts = [re.sub(r"\s+", "", parsed.text(*span)) for span in spans]
    first = next((i for i, t in enumerate(texts) if _VA_START.fullmatch(t)), None)
    if first is None:
        return None
    last = next((i for i in range(first + 1, len(texts)) if not _VA_ARG.fullmatch(texts[i])), None)
    if last is None or not _VA_END.fullmatch(texts[last]):
        return None
    lifted = (spans[first][0], spans[last][1])
    rest = parsed.text(region.lock_end, lifted[0]) + parsed.text(lifted[1], region.body_end)
    if identifiers_used(rest) & VA:
        return None  # the va_list used elsewhere in the region too
    va_list = texts[first][len("va_start("):].split(",")[0]
    set_here = {va_list} | {t.split("=")[0] for t in texts[first + 1 : last]}
    if identifiers_used(parsed.text(region.lock_end, lifted[0])) & set_here:
        return None
    if any(e.unlock_start < lifted[0] for e in analysis.exits) or any(
            n.kind in (K.RETURN_STMT, K.GOTO_STMT, K.INDIRECT_GOTO_STMT) or no_return_call(n)
            for c in following[:first] for n in preorder(c)):
        return None  # some path would not reach them: va_arg must not run there
    return lifted
