"""`va_start(ap, x); v = va_arg(ap, T); va_end(ap);` inside a region (region_checks.variadic_reads):
a va_list cannot be read in another function, so the reads run in the caller before the lock,
written just before the call."""

from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, Writing


class VariadicReads(Shape):
    name = "variadic-reads"
    fixture = "variadic_reads"

    def applies(self, region: Region) -> bool:
        return region.lifted is not None

    def call_site(self, writing: Writing, call: str) -> str:
        region, renderer = writing.region, writing.renderer
        return (f"{renderer.parsed.text(*region.lifted).strip()}\n#line {renderer._line(region.start)}\n"
                f"{writing.indent}{call}")


SHAPE = VariadicReads()
