"""What every lock idiom's reading shares: a macro's body as an invocation expands it (substitute,
invocation_body, as the preprocessor does), a statement's tokens within the expansion depth, the
#if lines of the macros a lock was read through, parentheses around a whole expression."""

from rclify.ctext.tokens import Token, matching_bracket, split_args, tokenize
from rclify.transform.vocabulary import Macro

MAX_EXPANSION_DEPTH = 8


def substitute(body: str, params: tuple[str, ...], args: list[str], parenthesize: bool = True) -> str | None:
    """Replaces macro/wrapper parameters by (argument) text, as the preprocessor does: `##`
    pastes the raw argument (`name##_lock`), `#p` makes it a string, `...` is __VA_ARGS__.
    None when the arguments do not fit the parameters or a `#` names no parameter.  An argument
    is put in parentheses (to be read as one expression) unless parenthesize is False: the exact
    text the preprocessor makes (`e->stats.stat` with stat = page_allocs)."""
    mapping = _arguments(params, args)
    if mapping is None:
        return None
    tokens = tokenize(body)
    out, paste = [], False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if i and not paste and tok.text != "##":
            out.append(body[tokens[i - 1].end : tok.start])  # the spacing as written
        if tok.text == "##":
            paste = True
            i += 1
            continue
        pasted = paste or (i + 1 < len(tokens) and tokens[i + 1].text == "##")
        if tok.text == "#" and params:
            if i + 1 >= len(tokens) or tokens[i + 1].text not in mapping:
                return None
            arg = mapping[tokens[i + 1].text]
            out.append('"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"')
            i += 1
        elif tok.kind == "ident" and tok.text in mapping:
            raw = pasted or tok.text == "__VA_ARGS__" or not parenthesize
            arg = _unparenthesized(mapping[tok.text]) if pasted else mapping[tok.text]
            out.append(arg if raw else f"({arg})")
        else:
            out.append(tok.text)
        paste = False
        i += 1
    if paste:
        return None  # `##` at the end of a body is ill-formed
    return body[: tokens[0].start] + "".join(out) if tokens else body


def _unparenthesized(arg: str) -> str:
    """A pasted argument without the parentheses an outer macro's substitution put around it
    (`helper(m, __LINE__)` passes `(__LINE__)` on; cpp pastes `i_ ## line` as `i___LINE__`): a
    token pasted to `(` would be ill-formed C, so they can only be ours."""
    tokens = tokenize(arg)
    while len(tokens) > 2 and tokens[0].text == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        arg = arg[tokens[1].start : tokens[-1].start]
        tokens = tokenize(arg)
    return arg


def _arguments(params: tuple[str, ...], args: list[str]) -> dict[str, str] | None:
    if params and params[-1] == "...":
        named = params[:-1]
        if len(args) < len(named):
            return None
        return dict(zip(named, args)) | {"__VA_ARGS__": ", ".join(args[len(named):])}
    if len(params) != len(args):
        return None
    return dict(zip(params, args))


def statement_tokens(text: str, depth: int) -> list[Token]:
    """A statement's tokens without its final `;` ([] past the expansion depth)."""
    if depth > MAX_EXPANSION_DEPTH:
        return []
    tokens = tokenize(text)
    while tokens and tokens[-1].text == ";":
        tokens.pop()
    return tokens


def joined(*lists: tuple[str, ...]) -> tuple[str, ...]:
    """The #if lines of the macros a lock was read through (Macro.conditions), each once, in order."""
    return tuple(dict.fromkeys(line for lines in lists for line in lines))


def unwrapped(expr: str) -> str:
    """expr without the parentheses around all of it: `((&m))` -> `&m`."""
    while expr.startswith("(") and expr.endswith(")"):
        tokens = tokenize(expr)
        if matching_bracket(tokens, 0) != len(tokens) - 1:
            break
        expr = expr[1:-1].strip()
    return expr


def invocation_body(macro: Macro, tokens: list[Token], text: str, parenthesize: bool = True) -> str | None:
    """The body of `macro` as invoked by the whole of text (tokens: its tokens), arguments
    substituted (in parentheses unless parenthesize is False: see substitute); None when text is
    not exactly one invocation of it."""
    if not macro.params:
        return macro.body if len(tokens) == 1 else None
    if len(tokens) < 3 or tokens[1].text != "(" or matching_bracket(tokens, 1) != len(tokens) - 1:
        return None
    return substitute(macro.body, macro.params, split_args(text[tokens[1].end : tokens[-1].start]), parenthesize)


def enclosed_statement(tokens: list[Token], text: str) -> str | None:
    """What a statement encloses when it is only a wrapper (macros leave them): `{ S }` or
    `do { S } while (0)` gives S's text; "" for another `do`; None for any other statement."""
    first = tokens[0].text if tokens else ""
    if first == "{" and matching_bracket(tokens, 0) == len(tokens) - 1:
        return text[tokens[0].end : tokens[-1].start]
    if first == "do" and len(tokens) > 6 and tokens[1].text == "{":
        close = matching_bracket(tokens, 1)
        tail = [t.text for t in tokens[close + 1 :]]
        if tail in (["while", "(", "0", ")"], ["while", "(", "false", ")"]):
            return text[tokens[2].start : tokens[close].start]
        return ""
    return None
