"""Preprocessor directives read as text: where a #define is, and #if nesting.

libclang sees the code after preprocessing and spatch keeps macro bodies as tokens, so the few
questions rclify asks about directives are answered here, from the file's text.
"""

import re


def logical_lines(text: str):
    """(first line number, last line number, text) of each line with its continuations joined."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        start, joined = i, lines[i]
        while joined.endswith("\\") and i + 1 < len(lines):
            i += 1
            joined = joined[:-1] + " " + lines[i]
        i += 1
        yield start + 1, i, joined


_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def quoted_includes(text: str) -> list[str]:
    """The names of a file's `#include "name"` directives, as written, in every #if branch."""
    return _QUOTED_INCLUDE.findall(text)


def define_around(text: str, line: int) -> str | None:
    """The text of the #define directive covering a 1-based line of text, or None."""
    for first, last, joined in logical_lines(text):
        if first <= line <= last:
            return joined if re.match(r"^\s*#\s*define\b", joined) else None
    return None


_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b", re.M)


def guards_at(data: bytes, offset: int) -> list[str] | None:
    """The #if/#ifdef/#ifndef lines whose first branch holds offset, outermost first; None when
    offset is in an #elif/#else branch (not reproduced).  An include guard (`#ifndef X` followed
    by `#define X`) is not a condition: code in it is compiled whenever the file is."""
    stack: list[tuple[str, bool]] = []  # (opening line, in its first branch); "" for a guard
    for m in _DIRECTIVE.finditer(data, 0, offset):
        word = m.group(1).decode()
        if word in ("if", "ifdef", "ifndef"):
            end = data.find(b"\n", m.start())
            line = data[m.start() : end if end >= 0 else len(data)].decode(errors="replace").strip()
            while line.endswith("\\"):  # continued directive
                nxt = data.find(b"\n", end + 1)
                line = line[:-1] + data[end + 1 : nxt if nxt >= 0 else len(data)].decode(errors="replace").strip()
                end = nxt
            stack.append(("" if _is_include_guard(line, data, end) else line, True))
        elif word in ("elif", "else") and stack:
            stack[-1] = (stack[-1][0], False)
        elif word == "endif" and stack:
            stack.pop()
    if any(not first for _, first in stack):
        return None
    return [line for line, _ in stack if line]


_GUARD_DEFINE = re.compile(rb"(?:\s|/\*.*?\*/|//[^\n]*)*#[ \t]*define[ \t]+(\w+)[ \t]*(?:/\*.*?\*/|//[^\n]*)?\s*(?:\n|\Z)", re.S)


def _is_include_guard(line: str, data: bytes, end: int) -> bool:
    """`#ifndef X` (or `#if !defined(X)`) whose next directive is `#define X` with no value."""
    m = re.fullmatch(r"#\s*(?:ifndef\s+(\w+)|if\s+!\s*defined\s*\(?\s*(\w+)\s*\)?)\s*", line)
    if not m or end < 0:
        return False
    define = _GUARD_DEFINE.match(data, end)
    return define is not None and define.group(1).decode() == (m.group(1) or m.group(2))


def splits_conditional(text: str) -> bool:
    """Does text open an #if it does not close, or close one it did not open?"""
    depth = 0
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            continue
        word = stripped.lstrip("#").strip().split(" ")[0]
        if word.startswith("if"):
            depth += 1
        elif word == "endif":
            depth -= 1
            if depth < 0:
                return True
    return depth != 0
