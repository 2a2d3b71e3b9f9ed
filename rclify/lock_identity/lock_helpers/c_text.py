"""Reading C text for lock helpers: a file's code with comments, strings and directives blanked,
its function definitions and function-like macros, the calls in a span of it, whether a name is
called, and what a call's value is assigned to."""

import re
from dataclasses import dataclass

from rclify.ctext.preprocessor import defines, directive_lines, one_branch_where_unbalanced
from rclify.ctext.tokens import Token, code_only, matching_bracket, tokenize, tokens_between, tokens_of
from rclify.lock_identity.lock_helpers.model import Function

# the call that initialises a mutex
INIT = "pthread_mutex_init"
# identifiers followed by `(` that are no calls
_NOT_CALLS = {
    "if", "while", "for", "switch", "return", "sizeof", "_Alignof", "alignof", "__alignof__", "typeof",
    "__typeof__", "__typeof", "_Generic", "defined", "__attribute__", "__attribute", "__extension__",
    "__asm__", "asm", "case", "do", "else", "_Static_assert", "static_assert", "__builtin_offsetof",
}
# how deep a macro's body is followed through the macros it calls
MAX_MACRO_DEPTH = 6


def blanked_code(text: str) -> str:
    """text with comments, strings and preprocessor directives blanked, offsets kept; of an #if
    group whose branches open or close braces, only the first branch (functions() counts them)."""
    lines = one_branch_where_unbalanced(code_only(text)).split("\n")
    for first, last in directive_lines(text):
        for i in range(first, last + 1):
            lines[i] = " " * len(lines[i])
    return "\n".join(lines)


def macros(text: str) -> dict[str, str]:
    """The function-like macros of a text: {name: body} (comments blanked; the last of several)."""
    return {d.name: d.body for d in defines(text) if d.params is not None}


def _opening(tokens: list[Token], close: int) -> int:
    """Index of the `(` matching the `)` at close, or -1."""
    depth = 0
    for j in range(close, -1, -1):
        if tokens[j].text == ")":
            depth += 1
        elif tokens[j].text == "(":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _param_name(tokens: list[Token]) -> str:
    """The name a parameter declaration declares ('' for `void` or an unnamed one)."""
    flat, depth = [], 0
    for t in tokens:
        depth += t.text == "["
        if depth == 0:
            flat.append(t)
        depth -= t.text == "]"
    for i, t in enumerate(flat):  # a function pointer: void (*cb)(int)
        if t.text == "(" and i + 2 < len(flat) and flat[i + 1].text == "*" and flat[i + 2].kind == "ident":
            return flat[i + 2].text
    idents = [t.text for t in flat if t.kind == "ident"]
    return idents[-1] if len(idents) > 1 else ""


def functions(file: str, code: str) -> list[Function]:
    """The function definitions of a file's code (comments, strings and directives blanked).
    Only the text between top-level statements is tokenized, not the bodies (most of a file):
    a definition is read from the tokens since the last `;` or `}` at file level before its `{`,
    as _functions_in_tokens reads it from the whole file's tokens, which it falls back to when
    a `)` there has no `(` after that boundary (the whole file's tokens could have one)."""
    marks = [(m.start(), m.group()) for m in _STRUCTURE.finditer(code)]
    closing = _closing_braces(marks)
    out, depth, boundary = [], 0, 0  # boundary: the offset just past the last file-level `;`/`}`
    k = 0
    while k < len(marks):
        at, mark = marks[k]
        if mark == "{" and depth == 0:
            if closing[k] < 0:
                break
            end = marks[closing[k]][0]
            tokens = [*tokens_between(code, boundary, at), Token("punct", "{", at, at + 1)]
            found = _definition(file, code, tokens, len(tokens) - 1, 0, end + 1)
            if found is _UNMATCHED:
                return _functions_in_tokens(file, code)
            if found is not None:
                out.append(found)
                k, boundary = closing[k] + 1, end + 1
                continue
            depth += 1
        elif mark == "{":
            depth += 1
        elif mark == "}":
            depth -= 1
            if depth == 0:
                boundary = at + 1
        elif depth == 0:  # `;`
            boundary = at + 1
        k += 1
    return out


_STRUCTURE = re.compile(r"[{};]")  # in blanked code, only tokens: no comment or literal holds one
_UNMATCHED = object()


def _closing_braces(marks: list[tuple[int, str]]) -> list[int]:
    """For each mark, the index of the `}` closing it where it is a `{` (-1: none), as
    tokens.matching_bracket finds it."""
    closing, open_ = [-1] * len(marks), []
    for k, (_, mark) in enumerate(marks):
        if mark == "{":
            open_.append(k)
        elif mark == "}" and open_:
            closing[open_.pop()] = k
    return closing


def _definition(file: str, code: str, tokens: list[Token], i: int, head: int, body_end: int
                ) -> Function | None | object:
    """The function whose body opens at tokens[i] (`{` at file level), its head from tokens[head]
    on (past the last file-level `;` or `}`); None: no function's body; _UNMATCHED: a `)` before
    it with no `(` in tokens."""
    close = i - 1
    while close >= 0 and tokens[close].text == ")":  # past __attribute__((...)) groups
        open_ = _opening(tokens, close)
        if open_ < 0:
            return _UNMATCHED
        if open_ > 0 and tokens[open_ - 1].text in ("__attribute__", "__attribute"):
            close = open_ - 2
            continue
        break
    if not (close >= 0 and tokens[close].text == ")"):
        return None
    open_ = _opening(tokens, close)
    if open_ < 0:
        return _UNMATCHED
    if not (open_ > 0 and tokens[open_ - 1].kind == "ident" and tokens[open_ - 1].text not in _NOT_CALLS):
        return None
    name = tokens[open_ - 1]
    params, start = [], open_ + 1
    for j in range(open_ + 1, close + 1):
        if (tokens[j].text == "," and _depth_between(tokens, open_, j) == 1) or j == close:
            params.append(_param_name(tokens[start:j]))
            start = j + 1
    words = [x.text for x in tokens[head : open_ - 1]]
    return Function(file, name.text, code.count("\n", 0, name.start) + 1, tuple(p for p in params if p),
                    "void" in words and "*" not in words, tokens[i].start, body_end, "static" in words)


def _functions_in_tokens(file: str, code: str) -> list[Function]:
    """functions(), from the whole file's tokens (a `(` a head's `)` has none of is no function)."""
    tokens = tokenize(code)
    out, depth, boundary = [], 0, -1
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.text == "{" and depth == 0:
            end = matching_bracket(tokens, i)
            if end < 0:
                break
            found = _definition(file, code, tokens, i, boundary + 1, tokens[end].end)
            if isinstance(found, Function):
                out.append(found)
                i, boundary = end + 1, end
                continue
            depth += 1
        elif t.text == "{":
            depth += 1
        elif t.text == "}":
            depth -= 1
            if depth == 0:
                boundary = i
        elif t.text == ";" and depth == 0:
            boundary = i
        i += 1
    return out


def _depth_between(tokens: list[Token], open_: int, j: int) -> int:
    depth = 0
    for k in range(open_, j):
        depth += tokens[k].text in "([{"
        depth -= tokens[k].text in ")]}"
    return depth


def calls_in(code: str, start: int, end: int):
    """(name, offset of the name, offset of its `(`) of each identifier called in code[start:end]
    (start and end between tokens: a whole text, or a body from its `{` to past its `}`).  A
    body's own tokens only: a helper's calls reach functions all over the tree, one body each."""
    if (start, end) == (0, len(code)):
        tokens = tokens_of(code)
    else:
        tokens = tokens_between(code, start, end)
    for i, t in enumerate(tokens[:-1]):
        if t.kind == "ident" and tokens[i + 1].text == "(" and t.text not in _NOT_CALLS:
            yield t.text, t.start, tokens[i + 1].start


def is_call(code: str, at: int) -> bool:
    """Is the identifier at offset `at` called (not declared: `int f(`, `T *f(`), with its
    parenthesis following?"""
    before = code[:at].rstrip()
    if not before:
        return False
    previous = re.search(r"(\w+|\S)$", before).group(1)
    if previous in ("return", "else", "do", "case"):
        return True
    return not (previous == "*" or re.fullmatch(r"\w+", previous))


def assigned_to(code: str, at: int, fn: Function | None) -> str:
    """What the value of the call at offset `at` is assigned to: `x` in `x = f()` and in
    `T *x = f()`, `c->lock` in `c->lock = (T *)f()`, `tbl[i]`; '' otherwise."""
    tokens = tokenize(code[fn.body_start + 1 if fn else 0 : at])
    i = len(tokens) - 1
    while i >= 0 and tokens[i].text == ")":  # a cast: (T *)
        open_ = _opening(tokens, i)
        inside = tokens[open_ + 1 : i]
        if open_ < 0 or not inside or any(x.kind != "ident" and x.text != "*" for x in inside):
            return ""
        i = open_ - 1
    if i < 1 or tokens[i].text != "=":
        return ""
    end = i - 1
    j = end  # back over a postfix expression: names, members, subscripts
    while j >= 0:
        if tokens[j].text == "]":
            depth = 0
            while j >= 0:
                depth += (tokens[j].text == "]") - (tokens[j].text == "[")
                if depth == 0:
                    break
                j -= 1
            j -= 1
        elif tokens[j].kind == "ident":
            if j >= 1 and tokens[j - 1].text in (".", "->"):
                j -= 2
            else:
                break
        else:
            return ""
    if j < 0 or tokens[j].kind != "ident":
        return ""
    text = code[(fn.body_start + 1 if fn else 0) + tokens[j].start : (fn.body_start + 1 if fn else 0) + tokens[end].end]
    if j >= 1 and tokens[j - 1].text == "*" and (j < 2 or tokens[j - 2].kind != "ident"):
        text = "*" + text  # *out = f()
    return re.sub(r"\s+", "", text)


def line_col(code: str, at: int) -> tuple[int, int]:
    line = code.count("\n", 0, at) + 1
    return line, at - (code.rfind("\n", 0, at) + 1)


@dataclass
class Source:
    """A file of the tree as inference reads it."""

    file: str
    code: str  # comments, strings and directives blanked
    functions: list[Function]


def read_sources(texts: dict[str, str]) -> list[Source]:
    """The files of a tree ({file: text}), in order of their names."""
    out = []
    for file, text in sorted(texts.items()):
        code = blanked_code(text)
        out.append(Source(file, code, functions(file, code) if "(" in code else []))
    return out
