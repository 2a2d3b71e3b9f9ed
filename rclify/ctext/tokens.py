"""C code as text: a small tokenizer and the helpers built on it.

Used on the text of critical sections: it sees macro arguments as written (libclang's AST only
sees their expansion), and it works on generated text too (a nested extraction's call site).
Every piece of rclify that splits a call's arguments, matches brackets or blanks comments does it
here (spatch's script rules too: semantic_patches/lib/rclify_smpl.py imports this module).
"""

import functools
import re
from typing import NamedTuple

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<string>[LuU8]*"(?:\\.|[^"\\\n])*")
  | (?P<char>[LuU]?'(?:\\.|[^'\\\n])*')
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<number>\.?\d(?:[eEpP][+-]|[\w.])*)
  | (?P<punct>->|\+\+|--|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=|\#\#|\.\.\.|[^\s\w])
  | (?P<stray>.)  # a character none of the above starts with (a non-ASCII letter): punctuation
    """,
    re.VERBOSE | re.DOTALL,
)

# After these tokens an identifier is not a variable: a member, a tag, a label, a directive's name
# (`#line 877` where a local is named `line`; `#x` in a macro body is a string, not x either).
_NOT_A_VARIABLE_AFTER = {".", "->", "struct", "union", "enum", "goto", "#"}


class Token(NamedTuple):  # a tuple: a file has tens of thousands, made faster than a frozen dataclass's
    kind: str
    text: str
    start: int
    end: int


def iter_tokens(text: str, pos: int = 0):
    """The tokens of text from offset pos on, lazily (comments and blanks skipped)."""
    for m in _TOKEN.finditer(text, pos):
        kind = m.lastgroup
        if kind not in ("ws", "comment"):
            yield Token("punct" if kind == "stray" else kind, m.group(), m.start(), m.end())


def tokenize(text: str) -> list[Token]:
    """text's tokens, a list of the caller's own."""
    return list(tokens_of(text))


@functools.lru_cache(maxsize=8192)
def tokens_of(text: str) -> tuple[Token, ...]:
    """text's tokens, shared (not to be changed).  The analysis asks for the same text's tokens
    again and again (a file's once per helper it might call, a statement once per reading of
    it): tokenized once."""
    return tuple(iter_tokens(text))


def tokens_between(text: str, start: int, end: int) -> list[Token]:
    """The tokens of text[start:end], offsets in text, start and end between tokens (a body from
    its `{` to past its `}`, the text between two file-level statements): the span alone is
    tokenized, not the whole text (a helper's calls reach one body each of functions all over
    the tree)."""
    out = []
    for token in iter_tokens(text, start):
        if token.end > end:
            break
        out.append(token)
    return out


_OPENERS = {"(": ")", "[": "]", "{": "}"}


def call_arguments(text: str, open_at: int) -> tuple[list[str], int] | None:
    """The arguments (as written, stripped) of the call whose `(` is at offset open_at, and the
    offset just past its `)`; None when the parenthesis is not closed.  Commas inside brackets,
    strings and comments do not split."""
    args, depth, start = [], 0, open_at + 1
    for tok in iter_tokens(text, open_at):
        if tok.text in _OPENERS:
            depth += 1
        elif tok.text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                last = text[start : tok.start].strip()
                if last or args:
                    args.append(last)
                return args, tok.end
        elif tok.text == "," and depth == 1:
            args.append(text[start : tok.start].strip())
            start = tok.end
    return None


def split_args(text: str) -> list[str]:
    """A call's argument list without its parentheses, split at its top-level commas."""
    found = call_arguments(f"({text})", 0)
    return found[0] if found is not None else [text.strip()]


def matching_bracket(tokens: list[Token], open_index: int) -> int:
    """Index of the token closing the bracket at open_index, or -1."""
    opener = tokens[open_index].text
    closer = _OPENERS[opener]
    depth = 0
    for i in range(open_index, len(tokens)):
        if tokens[i].text == opener:
            depth += 1
        elif tokens[i].text == closer:
            depth -= 1
            if depth == 0:
                return i
    return -1


@functools.lru_cache(maxsize=4096)
def code_only(text: str) -> str:
    """text with comments and string/char literal contents blanked, line structure kept (once per
    text: a file's is asked for by most steps)."""
    def blank(match: re.Match) -> str:
        chunk = match.group(0)
        if chunk.startswith("/"):
            return re.sub(r"[^\n]", " ", chunk)
        return chunk[0] + re.sub(r"[^\n]", " ", chunk[1:-1]) + chunk[-1]
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, text, flags=re.S)


def any_of(names) -> str:
    """The regular expression alternation of names (identifiers), sorted: `a|b|c`.  Callers put
    their word boundaries and what follows around it."""
    return "|".join(sorted(map(re.escape, names)))


def identifiers_used(text: str) -> set[str]:
    """Identifiers in text that may name variables (not members, tags or labels)."""
    return {t.text for t in _variable_tokens(tokenize(text))}


def _variable_tokens(tokens: list[Token]):
    previous = None
    for i, tok in enumerate(tokens):
        if tok.kind == "ident" and (previous is None or previous.text not in _NOT_A_VARIABLE_AFTER):
            following = tokens[i + 1].text if i + 1 < len(tokens) else ""
            # `name:` at statement start is a label, except in `a ? b : c`
            if not (following == ":" and previous is not None and previous.text in (";", "{", "}")):
                yield tok
        previous = tok


def rename_identifiers(text: str, mapping: dict[str, str]) -> str:
    """Replaces each variable-position identifier found in mapping by its replacement text."""
    if not mapping:
        return text
    out = []
    pos = 0
    for tok in _variable_tokens(tokenize(text)):
        replacement = mapping.get(tok.text)
        if replacement is not None:
            out.append(text[pos : tok.start])
            out.append(replacement)
            pos = tok.end
    out.append(text[pos:])
    return "".join(out)


def skip_to_semicolon(data: bytes, offset: int) -> int:
    """Offset just past the `;` that ends a statement whose expression ends at offset."""
    i = offset
    while i < len(data) and data[i : i + 1].isspace():
        i += 1
    if data[i : i + 1] == b";":
        return i + 1
    return offset


_PAREN_AROUND_NAME = re.compile(r"(?<![\w\])])\(((?:[A-Za-z_]\w*)(?:(?:\.|->)[A-Za-z_]\w*)*)\)")


def normalize(expr: str) -> str:
    """An expression's text without spaces or redundant parentheses, for comparisons:
    `&(m)`, `( & m )` and `&m` all give `&m`."""
    text = "".join(t.text for t in tokenize(expr))
    while True:
        while text.startswith("(") and text.endswith(")") and balanced(text[1:-1]):
            text = text[1:-1]
        if text.startswith("&(") and text.endswith(")") and balanced(text[2:-1]):
            text = "&" + text[2:-1]
            continue
        simpler = _PAREN_AROUND_NAME.sub(r"\1", text)
        if simpler == text:
            return text
        text = simpler


def balanced(text: str) -> bool:
    """Do the parentheses of text pair up?"""
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def pretty(expr: str) -> str:
    """Re-spaces an expression's tokens compactly, keeping apart tokens that would merge."""
    out = []
    previous = None
    for tok in tokenize(expr):
        if previous is not None:
            words = previous.kind in ("ident", "number") and tok.kind in ("ident", "number")
            merge = previous.kind == "punct" and tok.kind == "punct" and previous.text not in "()[]" \
                and tok.text not in "()[]," and len(previous.text + tok.text) <= 3
            if words or merge:
                out.append(" ")
        out.append(tok.text)
        previous = tok
    text = "".join(out)
    while (simpler := _PAREN_AROUND_NAME.sub(r"\1", text)) != text:
        text = simpler
    while text.startswith("&(") and text.endswith(")") and "(" not in text[2:-1]:
        text = "&" + text[2:-1]
    return text


def top_level_split(text: str, separator: str) -> list[str]:
    """text split at the separator tokens outside brackets."""
    parts, depth, start = [], 0, 0
    for tok in tokenize(text):
        if tok.text in "([{" and tok.kind == "punct":
            depth += 1
        elif tok.text in ")]}" and tok.kind == "punct":
            depth -= 1
        elif tok.text == separator and depth == 0:
            parts.append(text[start : tok.start])
            start = tok.end
    return parts + [text[start:]]
