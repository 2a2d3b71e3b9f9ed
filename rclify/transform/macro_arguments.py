"""Macro arguments whose spelling counts: a parameter the macro stringizes (`#x`) or pastes
(`a ## x`), directly or by passing it on to another macro that does.

A section reaches a local of its caller through its context (`lu4` becomes
`(*rclify_ctx->lu4)`), so a local written as such an argument would change what the macro makes:
`#define print(x) print_(#x, &x, sizeof (x))` with `print(lu4)` would print
`(*rclify_ctx->lu4)` for `lu4`.  spelled() says which names of a section are so written;
plan.spelled_captures defines them as macros around the section's function instead of renaming
them, or refuses the region (Reason.MACRO_SPELLS_LOCAL) where that cannot keep the spelling.  The definitions are those the unit's
preprocessor saw: the one libclang links the invocation to, then the unit's macros by name for
the macros its body invokes.
"""

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import macro_uses_in
from rclify.ctext.tokens import identifiers_used
from rclify.transform.lifetimes import macros_by_name
from rclify.transform.macro_sections import arguments_of
from rclify.transform.regions import Region

K = ci.CursorKind
_DEPTH = 8  # macros followed through other macros' bodies


def spelled(parsed: ParsedFile, region: Region, names: set[str]) -> tuple[set[str], set[str]]:
    """Those of names written in an argument of a macro invoked in the section whose parameter is
    stringized or pasted: (by the invoked macro itself, by another macro it passes the argument
    on to).  The first keep their spelling when the name is a macro of the section's function
    (the argument is spelled before it is expanded); the second do not: the argument is
    expanded before the inner macro sees it."""
    # not the region's own unlocks and relocks (the extraction replaces them) nor the code that
    # runs in the caller (exits' tails, windows: their names are not renamed)
    outside = [(x.unlock_start, x.tail_start) for x in region.exits] + region.unlocked_spans() \
        + [(w.unlock_start, w.released[0]) for w in region.windows] + [(w.released[1], w.relock_end) for w in region.windows]
    uses = [(s, e) for s, e in parsed.macro_uses if region.lock_end <= s and e < region.body_end
            and not any(a <= s < b for a, b in outside) and names & identifiers_used(parsed.text(s, e + 1))]
    direct: set[str] = set()
    passed_on: set[str] = set()
    if not uses:
        return direct, passed_on
    cursors = {c.extent.start.offset: c for c in macro_uses_in(parsed.tu, parsed.path)}
    for start, end in uses:
        cursor = cursors.get(start)
        definition = cursor.referenced if cursor is not None else None
        if definition is None or definition.kind != K.MACRO_DEFINITION:
            continue
        params, body = _split([t.spelling for t in definition.get_tokens()])
        if params is None:
            continue  # object-like: takes no argument
        args = arguments_of(parsed.text(start, end + 1), cursor.spelling)
        if args is None:
            continue
        here, inner = _spelled_positions(parsed, params, body, 0)
        for positions, found in ((here, direct), (inner, passed_on)):
            for k in positions:
                for arg in args[k:] if params[k] == "__VA_ARGS__" else args[k : k + 1]:
                    found |= names & identifiers_used(arg)
    return direct, passed_on


def _split(tokens: list[str]) -> tuple[list[str] | None, list[str]]:
    """(parameters, body) of a definition's tokens; parameters None for an object-like macro.
    A variadic macro's `...` is the parameter __VA_ARGS__ (GNU's `args...`: args)."""
    if len(tokens) < 2 or tokens[1] != "(":
        return None, tokens[1:]
    params, i = [], 2
    while i < len(tokens) and tokens[i] != ")":
        if tokens[i] == "...":
            if not (params and tokens[i - 1] == params[-1]):
                params.append("__VA_ARGS__")
        elif tokens[i] != ",":
            params.append(tokens[i])
        i += 1
    return params, tokens[i + 1 :]


def _spelled_positions(parsed: ParsedFile, params: list[str], body: list[str], depth: int) -> tuple[set[int], set[int]]:
    """The positions of params that body stringizes or pastes itself, and those it passes on to
    a macro that does (itself or further on)."""
    here = set()
    for i, tok in enumerate(body):
        if tok not in params:
            continue
        before = body[i - 1] if i else ""
        after = body[i + 1] if i + 1 < len(body) else ""
        if before in ("#", "##") or after == "##":
            here.add(params.index(tok))
    passed_on: set[int] = set()
    if depth >= _DEPTH:
        return here, passed_on
    macros = macros_by_name(parsed)
    for i, tok in enumerate(body):
        if i + 1 >= len(body) or body[i + 1] != "(" or tok not in macros:
            continue
        inner_params, inner_body = _split(macros[tok])
        if inner_params is None:
            continue
        inner_args = _token_arguments(body, i + 1)
        inner_here, inner_on = _spelled_positions(parsed, inner_params, inner_body, depth + 1)
        for k in inner_here | inner_on:
            passed = inner_args[k:] if inner_params[k] == "__VA_ARGS__" else inner_args[k : k + 1]
            passed_on |= {params.index(t) for arg in passed for t in arg if t in params}
    return here, passed_on


def _token_arguments(tokens: list[str], open_at: int) -> list[list[str]]:
    """The arguments, as tokens, of the call whose `(` is tokens[open_at]."""
    args, current, depth = [], [], 0
    for tok in tokens[open_at + 1 :]:
        if tok in ("(", "[", "{"):
            depth += 1
        elif tok in (")", "]", "}"):
            if depth == 0:
                break
            depth -= 1
        elif tok == "," and depth == 0:
            args.append(current)
            current = []
            continue
        current.append(tok)
    args.append(current)
    return args
