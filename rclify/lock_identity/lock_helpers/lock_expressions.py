"""Lock expressions: a mutex pointer expression read as the variable it hangs from and the path
from it (root()), and built again from a call's argument and that path (pointer_to())."""

import re

from rclify.ctext.tokens import balanced

_PATH = re.compile(r"(?:(?:->|\.)[A-Za-z_]\w*(?:\[\])*)+")


def bare(expr: str) -> str:
    """expr without whitespace, casts to a pointer type and enclosing parentheses."""
    text = re.sub(r"\s+", "", expr)
    changed = True
    while changed:
        before = text
        text = re.sub(r"^\((?:const)?(?:struct)?[A-Za-z_]\w*\*\)", "", text)  # a cast to a pointer type
        if text.startswith("(") and text.endswith(")") and balanced(text[1:-1]):
            text = text[1:-1]
        changed = text != before
    return text


def _blank_subscripts(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        if ch == "[":
            out.append("[" if depth == 0 else "")
            depth += 1
        elif ch == "]":
            depth -= 1
            out.append("]" if depth == 0 else "")
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def root(expr: str) -> tuple[str, str] | None:
    """(variable, path) of a mutex pointer expression that hangs from a pointer variable:
    'm' -> ('m', ''), '&l->m' -> ('l', '->m'), '&(p)->locks[i]' -> ('p', '->locks[]'); None for
    anything else (the address of a variable, of a field of a struct variable)."""
    text = bare(expr)
    if re.fullmatch(r"[A-Za-z_]\w*", text):
        return text, ""
    if not text.startswith("&"):
        return None
    inner = _blank_subscripts(bare(text[1:]))
    m = re.match(r"\(?([A-Za-z_]\w*)\)?(->.*)$", inner)
    if m is None or not _PATH.fullmatch(m.group(2)):
        return None
    return m.group(1), m.group(2)


def pointer_to(base: str, path: str) -> str:
    """A pointer to what path names in the object base points to: ('&c->big', '->m') ->
    '&c->big.m', ('l', '->m') -> '&l->m', ('m', '') -> 'm'."""
    b = re.sub(r"\s+", "", base)
    if not path:
        return b
    simple = r"[A-Za-z_][\w.\->\[\]]*"
    if path == "&":  # an init macro's `pthread_mutex_init(&(m), ..)`: base names the mutex itself
        return f"&{b}" if re.fullmatch(simple, b) else f"&({b})"
    if b.startswith("&") and re.fullmatch(simple, b[1:]):
        return f"&{b[1:]}.{path[2:]}"
    if re.fullmatch(simple, b):
        return f"&{b}{path}"
    return f"&({b}){path}"
