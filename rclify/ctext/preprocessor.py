"""Preprocessor directives read as text: where a #define is, and #if nesting.

libclang sees the code after preprocessing and spatch keeps macro bodies as tokens, so the few
questions rclify asks about directives are answered here, from the file's text.
"""

import functools
import re
from dataclasses import dataclass
from pathlib import PurePath

from rclify.ctext.tokens import code_only


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


@functools.lru_cache(maxsize=4096)
def directive_lines(text: str) -> tuple[tuple[int, int], ...]:
    """(first line index, last line index), 0-based, of each preprocessor directive of text,
    continuation lines included (read on the text itself: a comment blanked inside a #define
    would hide them).  Once per text: several steps read a file's directives."""
    code_lines, lines = code_only(text).split("\n"), text.split("\n")
    found = []
    i = 0
    while i < len(lines):
        if code_lines[i].lstrip().startswith("#"):
            first = i
            while i + 1 < len(lines) and lines[i].endswith("\\"):
                i += 1
            found.append((first, i))
        i += 1
    return tuple(found)


_BRANCH = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b")


def one_branch_where_unbalanced(code: str) -> str:
    """code (comments and strings blanked) with every #elif/#else branch blanked, offsets kept,
    in each #if group whose branches open or close braces: read with all branches, such a group
    (`#ifdef X int f(int a) { #else int f(int a, int b) { #endif`; rclify's own conditional call
    sites, which keep the original region under #else) would count its braces twice.  Groups
    whose branches each balance their braces are left whole, so both branches' code is seen."""
    lines = code.split("\n")
    blank: list[tuple[int, int]] = []
    stack: list[list[list[int]]] = []  # per open group: [first line, brace delta] of each branch
    i = 0
    while i < len(lines):
        first = i
        while i + 1 < len(lines) and lines[i].endswith("\\"):
            i += 1
        m = _BRANCH.match(lines[first])
        if m is None:
            if stack:
                for line in lines[first : i + 1]:
                    stack[-1][-1][1] += line.count("{") - line.count("}")
        elif m.group(1).startswith("if"):
            stack.append([[first, 0]])
        elif m.group(1) in ("elif", "else") and stack:
            stack[-1].append([first, 0])
        elif stack:  # endif
            branches = stack.pop()
            kept = 0
            if any(delta for _, delta in branches):
                blank += [(start, end) for (start, _), (end, _) in zip(branches[1:], branches[2:] + [[first, 0]])]
                kept = branches[0][1]
            if stack:
                stack[-1][-1][1] += kept
        i += 1
    for start, end in blank:
        for k in range(start, end):
            lines[k] = " " * len(lines[k])
    return "\n".join(lines)


@dataclass(frozen=True)
class Define:
    """One #define of a text, in whichever #if branch it stands."""

    line: int  # 1-based, of the directive's first line
    name: str
    params: tuple[str, ...] | None  # None: an object-like macro
    body: str  # comments and string contents blanked, continuation lines joined


_DEFINE = re.compile(r"[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\(([^)]*)\))?(.*)", re.S)


def defines(text: str) -> list[Define]:
    """Every #define of text, in order (all #if branches: the one place rclify reads them as text;
    libclang gives the vocabulary those the build compiles)."""
    if "define" not in text:
        return []
    code = code_only(text).split("\n")
    out = []
    for first, last in directive_lines(text):
        joined = " ".join(line.rstrip("\\") for line in code[first : last + 1])
        m = _DEFINE.match(joined)
        if m:
            params = tuple(p.strip() for p in m.group(3).split(",") if p.strip()) if m.group(2) else None
            out.append(Define(first + 1, m.group(1), params, m.group(4)))
    return out


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)


def includes(text: str) -> list[tuple[str, str]]:
    """(`"` or `<`, name) of each of a file's #include directives, the name as written, in every
    #if branch: every step that reads includes reads them here."""
    return _INCLUDE.findall(text)


def quoted_includes(text: str) -> list[str]:
    """The names of a file's `#include "name"` directives, as written, in every #if branch."""
    return [name for delimiter, name in includes(text) if delimiter == '"']


def includes_named(text: str, base_names: set[str]) -> bool:
    """Does text #include "…/name" for one of base_names (a header known by its file name)?"""
    return any(PurePath(name).name in base_names for name in quoted_includes(text))


def define_around(text: str, line: int) -> str | None:
    """The text of the #define directive covering a 1-based line of text, or None."""
    for first, last, joined in logical_lines(text):
        if first <= line <= last:
            return joined if re.match(r"^\s*#\s*define\b", joined) else None
    return None


_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b", re.M)


@functools.lru_cache(maxsize=64)
def _conditionals(data: bytes) -> tuple[tuple[int, str, str, int, bool], ...]:
    """Every #if/#ifdef/#ifndef/#elif/#else/#endif of data, in order: (its offset, its word, its
    text with continuation lines joined, the offset of its end (-1: the file's), an include
    guard's #ifndef?).  Cached: a header's hundreds of #defines each ask for the conditions
    around them (libuv: 2 minutes of rescanning before)."""
    out = []
    for m in _DIRECTIVE.finditer(data):
        word = m.group(1).decode()
        line, end = _directive_text(data, m.start())
        guard = word in ("if", "ifdef", "ifndef") and _is_include_guard(line, data, end)
        out.append((m.start(), word, line, end, guard))
    return tuple(out)


def guards_at(data: bytes, offset: int, since: int = 0) -> list[str]:
    """The conditions under which offset is compiled, as `#if` lines, outermost first, counting only
    the #if blocks opened at or after `since` (those opened before hold at `since` too): in a first
    branch the opening line itself; in an #elif/#else branch an equivalent `#if !(A) && (B)`.  An
    include guard (`#ifndef X` followed by `#define X`) is not a condition: code in it is compiled
    whenever the file is.  Generated code placed at `since` and wrapped in these lines is compiled
    exactly when the code at offset is."""
    # each open block: (its opening line, the expressions of the branches before this one, the
    # current branch's expression or None for #else, an include guard?)
    stack: list[tuple[str, list[str], str | None, bool]] = []
    for start, word, line, _, guard in _conditionals(data):
        if start >= offset:
            break
        if word in ("if", "ifdef", "ifndef"):
            # a block opened before `since` holds there too: never a condition (no expression kept)
            stack.append((line, [], _expression(word, line), guard) if start >= since else ("", [], None, True))
        elif word in ("elif", "else") and stack:
            opening, before, current, guard = stack[-1]
            if current is not None:
                before = before + [current]
            stack[-1] = (opening, before, _expression(word, line) if word == "elif" else None, guard)
        elif word == "endif" and stack:
            stack.pop()
    lines = []
    for opening, before, current, guard in stack:
        if guard and not before:  # an include guard's first branch, or a block opened before since
            continue
        if not before:
            lines.append(opening)
        else:
            terms = [f"!({e})" for e in before] + ([f"({current})"] if current is not None else [])
            lines.append("#if " + " && ".join(terms))
    return lines


def other_branches(data: bytes, offset: int, since: int = 0) -> list[tuple[int, int]]:
    """The text ranges of the branches of every #if block opened at or after `since` that holds
    offset, other than the branch offset is in (where the same name may be declared differently)."""
    blocks: list[list[list[int]] | None] = []  # per open block: [start, end] of each branch so far
    ranges: list[tuple[int, int]] = []
    for start, word, _, after, _ in _conditionals(data):
        after = len(data) if after < 0 else after  # a branch starts after its directive's line
        if word in ("if", "ifdef", "ifndef"):
            blocks.append([[after, len(data)]] if start >= since else None)
        elif word in ("elif", "else", "endif") and blocks:
            branches = blocks[-1]
            if branches is not None:
                branches[-1][1] = start
                if word != "endif":
                    branches.append([after, len(data)])
            if word == "endif":
                blocks.pop()
                if branches and branches[0][0] <= offset < branches[-1][1]:
                    ranges += [(a, b) for a, b in branches if not a <= offset < b]
    return ranges


@dataclass(frozen=True)
class ConditionalBlock:
    """An `#if` block with no #else: [start, body_start) is its #if line, [body_start, body_end)
    what it holds, [body_end, end) its #endif line; line is the #if line's text."""
    start: int
    body_start: int
    body_end: int
    end: int
    line: str


def conditional_block(data: bytes, start: int, end: int) -> ConditionalBlock | None:
    """The innermost #if block holding [start, end), when it has no #else or #elif and the span
    itself opens or closes none; else None.  libmicrohttpd's way of optional locking:
    `#if THREADS` / (other statements) `lock(&m);` / `#endif`."""
    opening = None
    depth = 0
    for m in reversed(list(_DIRECTIVE.finditer(data, 0, start))):
        word = m.group(1)
        if word == b"endif":
            depth += 1
        elif word.startswith(b"if"):
            if depth == 0:
                opening = m
                break
            depth -= 1
        elif depth == 0:  # start is in an #else or #elif branch
            return None
    if opening is None or _DIRECTIVE.search(data[start:end]):
        return None
    line, line_end = _directive_text(data, opening.start())
    if line_end < 0 or line_end >= start:
        return None
    depth = 0
    for m in _DIRECTIVE.finditer(data, end):
        word = m.group(1)
        if word.startswith(b"if"):
            depth += 1
        elif word == b"endif" and depth > 0:
            depth -= 1
        elif word == b"endif":
            closing = _ENDIF_LINE.match(data, m.start())
            if closing is None:
                return None
            return ConditionalBlock(opening.start(), line_end + 1, m.start(), closing.end(), line)
        elif depth == 0:  # an #else or #elif of the block
            return None
    return None


_ENDIF_LINE = re.compile(rb"[ \t]*#[ \t]*endif\b[^\n]*(?:\n|\Z)")


def conditional_around(data: bytes, start: int, end: int) -> ConditionalBlock | None:
    """The #if block (conditional_block) in which the statement [start, end) is alone."""
    block = conditional_block(data, start, end)
    if block is None or data[block.body_start:start].strip() or data[end:block.body_end].strip():
        return None
    return block


def condition_expression(line: str) -> str:
    """The expression an `#if`, `#ifdef` or `#ifndef` line tests (guards_at's lines)."""
    m = re.match(r"\s*#\s*(ifdef|ifndef|if)\b", line)
    if m is None:
        raise ValueError(f"not an #if line: {line!r}")
    return _expression(m.group(1), line)


def same_condition(a: str, b: str) -> bool:
    """Do two #if lines test the same thing (spacing and comments aside)?"""
    def norm(line: str) -> str:
        return re.sub(r"\s+", "", _COMMENT.sub("", line))
    return norm(a) == norm(b)


def _directive_text(data: bytes, start: int) -> tuple[str, int]:
    """The directive starting at start, continuation lines joined, and the offset of its end."""
    end = data.find(b"\n", start)
    line = data[start : end if end >= 0 else len(data)].decode(errors="replace").strip()
    while line.endswith("\\") and end >= 0:  # continued directive
        nxt = data.find(b"\n", end + 1)
        line = line[:-1] + data[end + 1 : nxt if nxt >= 0 else len(data)].decode(errors="replace").strip()
        end = nxt
    return line, end


_COMMENT = re.compile(r"/\*.*?\*/|//.*$")


def _expression(word: str, line: str) -> str:
    """The condition of an #if/#ifdef/#ifndef/#elif line, as an #if expression."""
    rest = _COMMENT.sub(" ", line.split(word, 1)[1]).strip()
    if word == "ifdef":
        return f"defined({rest})"
    if word == "ifndef":
        return f"!defined({rest})"
    return rest


# comments matched one way only (a lazy `/\*.*?\*/` could stretch over the next `*/` on
# backtracking: exponential in the comments before a line that is not a #define)
_C_COMMENT = rb"/\*(?:[^*]|\*(?!/))*\*/"
_GUARD_DEFINE = re.compile(rb"(?:\s|" + _C_COMMENT + rb"|//[^\n]*)*#[ \t]*define[ \t]+(\w+)[ \t]*(?:"
                           + _C_COMMENT + rb"|//[^\n]*)?\s*(?:\n|\Z)")


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
