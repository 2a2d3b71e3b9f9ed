"""What a section's function must see as the function it was cut from does.

The section's function is placed before the enclosing function (render.py), outside it: what the
enclosing function's body sees by its position, the section would not.
  - prototype(): the enclosing function itself, for a section that calls it (recursion);
  - macros(): the #defines the function makes before the region, and __func__, __FUNCTION__,
    __PRETTY_FUNCTION__ where a macro the section expands names the function (TRACE(v), glibc's
    assert), defined again around the section's function (templates/extract/cs_function.c.j2).
"""

import re

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import child_nodes
from rclify.ctext.preprocessor import directive_lines
from rclify.ctext.tokens import identifiers_used
from rclify.transform.refusals import Reason, Refusal
from rclify.transform.regions import Region

FUNCTION_NAMES = ("__func__", "__FUNCTION__", "__PRETTY_FUNCTION__")


def prototype(parsed: ParsedFile, fn: ci.Cursor) -> str:
    """The enclosing function's prototype, for a section that calls it (placed before the
    function, the section would call it undeclared), or "" when it is declared before already
    (or its header cannot be copied: an old-style definition)."""
    first = fn.canonical
    if first.extent.start.file is None or first.extent.start.file.name != fn.extent.start.file.name \
            or first.extent.start.offset < fn.extent.start.offset:
        return ""  # declared in a header, or earlier in the file
    body = next((c for c in child_nodes(fn) if c.kind == ci.CursorKind.COMPOUND_STMT), None)
    if body is None:
        return ""
    header = parsed.text(fn.extent.start.offset, body.extent.start.offset).strip()
    return "" if ";" in header or "#" in header else f"{header};"


def macros(region: Region, body: str) -> list[tuple[str, str]]:
    """The macros the section's function must see as the enclosing function does, (name, the
    #define line) each, defined around it with #pragma push_macro/pop_macro (cs_function.c.j2):
    the #defines of the enclosing function before the region that the section names (placed
    before the function, it would see them undefined), and __func__ & co. where a macro the
    section expands names them (_names_its_function).  One the function defines inside an #if
    block is refused (preprocessor-conditional): which definition holds is the configuration's."""
    fn_start = region.function.extent.start.offset
    text = region.parsed.text(fn_start, region.start)
    lines = text.split("\n")
    used = None  # the body's identifiers, read where the function defines a macro
    found: dict[str, str] = {}
    depth = 0  # #if blocks of the function open at this point (< 0: one opened before it)
    for first, last in directive_lines(text):
        directive = "\n".join(lines[first : last + 1]).strip()
        words = directive.lstrip("#").split(None, 2)
        keyword = words[0] if words else ""
        if keyword in ("if", "ifdef", "ifndef"):
            depth += 1
        elif keyword == "endif":
            depth -= 1
        elif keyword in ("else", "elif"):
            depth = depth if depth > 0 else -1  # the branch of a block opened before the function
        name = re.match(r"[A-Za-z_]\w*", words[1]) if len(words) >= 2 and keyword in ("define", "undef") else None
        if name is not None and used is None:
            used = identifiers_used(body)
        if name is None or name.group(0) not in used:
            continue
        if depth != 0:
            raise Refusal(Reason.PREPROCESSOR_CONDITIONAL)
        found.pop(name.group(0), None)
        if keyword == "define":
            found[name.group(0)] = directive
    out = list(found.items())
    if _names_its_function(region):
        out += [(name, f'#define {name} "{region.function.spelling}"') for name in FUNCTION_NAMES]
    return out


def _names_its_function(region: Region) -> bool:
    """Does the section use __func__ (or __FUNCTION__, __PRETTY_FUNCTION__) where its text does not
    show it: in a macro's expansion (`TRACE(v)`, glibc's assert)?  libclang shows each use as the
    function's name as a string literal, at a place whose text is not that literal.  The section's
    function then defines them as the enclosing function's name (cs_function.c.j2), so that they
    keep naming the user's function, not rclify_cs_<function>_<n>."""
    name = f'"{region.function.spelling}"'
    data = region.parsed.data
    return any(node.spelling == name and region.lock_end <= node.extent.start.offset < region.body_end
               and not data[node.extent.start.offset:].startswith(b'"')
               for node in region.parsed.nodes_of(region.compound, ci.CursorKind.STRING_LITERAL))
