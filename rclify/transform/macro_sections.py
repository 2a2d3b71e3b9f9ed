"""Sections inside a statement macro's expansion: `WITH_LOCK(m, count++);`, zstd's
`JOB_ERROR(e)` (`{ LOCK(&job->job_mutex); job->cSize = e; UNLOCK(&job->job_mutex); goto _endJob; }`).

The lock and the unlock are in the macro's body, the section between them, so no text of the
file is the section.  The invocation is expanded once, as the preprocessor would (its arguments
substituted as written, no parentheses added: `e->stats.stat` with stat = `page_allocs`; inner
macros left to the compiler), and read as statements:

    P  LOCK  S  UNLOCK  Q

P and Q run in the caller (before the call, after it: Q may jump, `goto _endJob;`), S is the
section.  The call site replaces the invocation; the macro's definition stays for other uses.
Expanded only when what the compiler would see is sure and simple (else the region stays hybrid,
section-in-macro): the definition libclang used at this invocation, under no #if of its file; a
body of statements (braces or `do { } while (0)` around them) with one lock and one unlock of one
lock; no other lock operation, no declaration, no jump or label in S (P and Q: no lock operation).
"""

import re
from dataclasses import dataclass
from pathlib import Path

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import macro_uses_in, preorder
from rclify.ctext.preprocessor import guards_at
from rclify.ctext.tokens import Token, matching_bracket, split_args, tokenize
from rclify.transform.lock_statements.calls import classify, lock_calls
from rclify.transform.lock_statements.expansion import substitute
from rclify.transform.vocabulary import LockOp, Vocabulary
from rclify.transform.vocabulary_inference import macro_definition

K = ci.CursorKind
_JUMPS = {"return", "goto", "break", "continue", "case", "default"}


@dataclass
class MacroSection:
    """An expanded statement macro's pieces, as text (see the module's comment)."""

    before: str  # P
    body: str  # S
    after: str  # Q
    lock: LockOp
    unlock: LockOp


def expanded_section(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, start: int, end: int,
                     key: str) -> MacroSection | None:
    """The section of the statement macro invoked at [start, end) of the file, in function,
    holding the lock whose key is given; None when it cannot be read for sure (the module's
    comment).  Every node of the expansion lies at the invocation: a declaration there is one of
    the expansion's (the region's offsets could not tell its scope)."""
    invocation = _invocation(parsed, start)
    if invocation is None or any(n.kind in (K.DECL_STMT, K.VAR_DECL) and start <= n.extent.start.offset < end
                                 for n in preorder(function)):
        return None
    definition = invocation.referenced
    if definition is None or definition.kind != K.MACRO_DEFINITION or definition.location.file is None:
        return None
    try:
        defined_in = Path(definition.location.file.name).read_bytes()
    except OSError:
        return None
    if [g for g in guards_at(defined_in, definition.extent.start.offset) if not _is_guard_of(g, defined_in)]:
        return None  # defined under #if: what the other configurations expand to is not this
    found = macro_definition(definition, defined_in)
    if found is None:
        return None
    _, params, body = found
    args = arguments_of(parsed.text(start, end), invocation.spelling)
    if args is None:
        return None
    expansion = substitute(body, params, args, parenthesize=False) if args or params else body
    if expansion is None:
        return None
    statements = _statements(_unwrapped(expansion))
    if statements is None:
        return None
    ops = [classify(s, vocab) for s in statements]
    marks = [i for i, op in enumerate(ops) if op is not None]
    if len(marks) != 2:
        return None
    (i, lock), (j, unlock) = (marks[0], ops[marks[0]]), (marks[1], ops[marks[1]])
    if lock.kind != "lock" or unlock.kind != "unlock" or lock.key != key or unlock.key != key:
        return None
    if any(lock_calls(s, vocab) for k, s in enumerate(statements) if k not in (i, j)):
        return None
    section = statements[i + 1 : j]
    if any(_jumps_or_labels(s) for s in section):
        return None
    return MacroSection(" ".join(statements[:i]), " ".join(section), " ".join(statements[j + 1 :]), lock, unlock)


def _jumps_or_labels(statement: str) -> bool:
    """Does a statement of S jump (return, goto, break, continue) or hold a label (`case`,
    `default`, `name:`)?  A `:` that closes a `?` is a conditional expression's."""
    open_conditionals = 0
    for tok in tokenize(statement):
        if tok.text in _JUMPS:
            return True
        if tok.text == "?":
            open_conditionals += 1
        elif tok.text == ":":
            if not open_conditionals:
                return True
            open_conditionals -= 1
    return False


def _invocation(parsed: ParsedFile, start: int) -> ci.Cursor | None:
    """The macro instantiation that starts at offset start of the file."""
    return next((c for c in macro_uses_in(parsed.tu, parsed.path) if c.extent.start.offset == start), None)


def _is_guard_of(line: str, data: bytes) -> bool:
    """Is an `#ifndef X` line the include guard of its file (`#define X` next)?"""
    m = re.match(r"\s*#\s*ifndef\s+(\w+)", line)
    return m is not None and re.search(rb"^\s*#\s*define\s+" + m.group(1).encode() + rb"\b", data, re.M) is not None


def arguments_of(text: str, name: str) -> list[str] | None:
    """The invocation's arguments, as written: `NAME(a, b)` or `NAME` ([]), with an optional `;`
    after it."""
    tokens = tokenize(text)
    while tokens and tokens[-1].text == ";":
        tokens.pop()
    if not tokens or tokens[0].text != name:
        return None
    if len(tokens) == 1:
        return []
    if len(tokens) < 3 or tokens[1].text != "(" or matching_bracket(tokens, 1) != len(tokens) - 1:
        return None
    inner = text[tokens[1].end : tokens[-1].start]
    return split_args(inner) if inner.strip() else []


def _unwrapped(text: str) -> str:
    """The statements of a body written `{ ... }` or `do { ... } while (0)`."""
    tokens = tokenize(text)
    while tokens and tokens[-1].text == ";":
        tokens.pop()
    texts = [t.text for t in tokens]
    if len(texts) >= 7 and texts[:2] == ["do", "{"] and texts[-4:] == ["while", "(", "0", ")"] \
            and matching_bracket(tokens, 1) == len(tokens) - 5:
        return text[tokens[1].end : tokens[-5].start]
    if texts[:1] == ["{"] and matching_bracket(tokens, 0) == len(tokens) - 1:
        return text[tokens[0].end : tokens[-1].start]
    return text


def _statements(text: str) -> list[str] | None:
    """text split into its top-level statements (None when it does not read as statements)."""
    tokens = tokenize(text)
    out = []
    i = 0
    while i < len(tokens):
        j = _statement_end(tokens, i)
        if j is None:
            return None
        out.append(text[tokens[i].start : tokens[j].end])
        i = j + 1
    return out


def _statement_end(tokens: list[Token], i: int) -> int | None:
    """Index of the last token of the statement starting at tokens[i]."""
    if i >= len(tokens):
        return None
    word = tokens[i].text
    if word == "{":
        close = matching_bracket(tokens, i)
        return close if close > i else None
    if word in ("if", "while", "for", "switch"):
        if i + 1 >= len(tokens) or tokens[i + 1].text != "(":
            return None
        close = matching_bracket(tokens, i + 1)
        if close <= i:
            return None
        end = _statement_end(tokens, close + 1)
        if end is not None and word == "if" and end + 1 < len(tokens) and tokens[end + 1].text == "else":
            end = _statement_end(tokens, end + 2)
        return end
    if word == "do":
        body_end = _statement_end(tokens, i + 1)
        if body_end is None or body_end + 2 >= len(tokens) or tokens[body_end + 1].text != "while":
            return None
        close = matching_bracket(tokens, body_end + 2)
        return close + 1 if close > 0 and close + 1 < len(tokens) and tokens[close + 1].text == ";" else None
    depth = 0
    for k in range(i, len(tokens)):
        text = tokens[k].text
        if text in "([{":
            depth += 1
        elif text in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif text == ";" and depth == 0:
            return k
    return None
