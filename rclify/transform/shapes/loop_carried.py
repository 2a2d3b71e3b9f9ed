"""Sections carried around a loop: a worker's loop holds the lock at its test, releases it in its
body to do the work and takes it again before going round.  Where one starts and ends
(loop_region, asked by region_bounds.py of a lock statement's region the plain walk refused),
and how its section is written: one section run per round.

    lock(&m);                   P      the section: P, the loop's first clause, its test and A;
    P                                  after B, D, the step, the test and A again, as one run
    while (C) {                        of the section each time; when the loop ends holding the
        A                              lock, Q
        unlock(&m);
        B                              unlocked: runs in the caller between two runs
        lock(&m);
        D
    }
    Q
    unlock(&m);                        absent when the loop only leaves through A's or D's exits
                                       (`unlock(&m); break;`, the thread pool's exit message)

The section the transform writes (render.py, resumable_call_site.c.j2) keeps the loop's own control
flow: D, the step and the test sit in a `for` of the section whose `continue` and `break` are the
loop's, so a `continue` in A or D reaches the step and the test under the lock, a `break` in A or
D ends the loop holding it (then Q runs); an early exit (`unlock(&m); break;`, `unlock(&m);
return x;`) is a flag like any other, its tail run by the caller, which then leaves the loop.
B runs in the caller's loop and tells the section to go on with D.

Refused (the plain region's reason stays): a `do` loop; a `for` declaring its variables; a body
that is no block, or whose top level does not unlock then relock this lock exactly once; a `continue`
in B or after an early unlock (the loop's test would run unlocked); a lock-held `break` with no
unlock after the loop, a `break` in B or an early `unlock; break` with one (the unlock after the
loop would run unlocked); a local declared in one of A, B and D and used in another.

The section's body (the shape's): P and the loop's first clause on the first run; D, the step and
the test on the next ones; A; then the flag that has the caller run B (released_text) before the
section runs again.  A hoisted declaration cannot be placed in such a body: refused.
"""

from dataclasses import dataclass

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.cursors import child_nodes
from rclify.ctext.tokens import identifiers_used, matching_bracket, tokenize, top_level_split
from rclify.transform.lock_statements.calls import lock_calls
from rclify.transform.refusals import Reason, Refusal
from rclify.transform.region_walk import HELD, RELEASED, Construct, RegionAnalysis, loop_is_infinite
from rclify.transform.regions import Region, unlabeled
from rclify.transform.shapes.shape import Shape, Writing
from rclify.transform.vocabulary import LockOp, Vocabulary

K = ci.CursorKind
Span = tuple[int, int]


class LoopCarried(Shape):
    name = "loop-carried"
    fixture = "conditional_loop_carried"

    def applies(self, region: Region) -> bool:
        return region.loop is not None

    def body(self, writing: Writing) -> str:
        if writing.hoists:
            raise Refusal(Reason.HOIST_NOT_SIMPLE)
        return _loop_body(writing.renderer, writing.region, writing.exit_edits)


SHAPE = LoopCarried()


@dataclass
class LoopParts:
    """The pieces of a loop-carried section, as offsets of the file (see the module's comment)."""

    loop: ci.Cursor
    prelude: Span  # P, from the lock to the loop
    init: Span | None  # a `for`'s first clause (an expression)
    test: Span | None  # the loop's condition (None: none, `for (;;)`)
    step: Span | None  # a `for`'s third clause
    held: Span  # A: the body up to the unlock
    unlock: Span  # the unlock statement in the body
    released: Span  # B
    relock: Span  # the lock statement in the body
    retaken: Span  # D: after the relock to the body's end
    after: Span | None  # Q: from the loop to the final unlock (None: there is no final unlock)
    unlock_op: LockOp
    relock_op: LockOp


def loop_region(parsed: ParsedFile, vocab: Vocabulary, region: Region,
                following: list[ci.Cursor]) -> RegionAnalysis | None:
    """Makes region (a lock statement's region the plain analysis refused) a loop-carried one when
    the statements after its lock are `P loop Q unlock` (or `P loop` ending the block) as the
    module's comment says: returns the analysis of its locked parts (exits, problems) when it did,
    None (region untouched) when it did not."""
    key = region.lock.key
    analysis = RegionAnalysis(parsed, vocab, key)
    at = next((i for i, s in enumerate(following) if unlabeled(s).kind in (K.WHILE_STMT, K.FOR_STMT)
               and _relocks_inside(parsed, vocab, unlabeled(s), key)), None)
    if at is None or region.is_trylock or region.lock.kind != "lock":
        return None
    prelude, loop, rest = following[:at], unlabeled(following[at]), following[at + 1:]
    if loop is not following[at]:
        return None  # a labeled loop: a goto could enter it unlocked
    header = _header(parsed, loop)
    body = child_nodes(loop)[-1]
    if header is None or body.kind != K.COMPOUND_STMT:
        return None
    init, test, step = header
    children = child_nodes(body)
    ops = [(i, op) for i, c in enumerate(children)
           if (op := analysis.op_of(unlabeled(c))) is not None and op.key == key]
    if [op.kind for _, op in ops] != ["unlock", "lock"] or any(unlabeled(children[i]) is not children[i] for i, _ in ops) \
            or ops[0][1].effect_vars:  # an unlock that increments (`unlock(&a[i++])`): an ordinary region
        return None
    (u, unlock_op), (r, relock_op) = ops
    # the final unlock: the first statement after the loop that is this lock's unlock
    final = next((j for j, s in enumerate(rest) if (op := analysis.op_of(unlabeled(s))) is not None
                  and op.key == key), None)
    if final is not None and (analysis.op_of(unlabeled(rest[final])).kind != "unlock"):
        return None
    between = rest[:final] if final is not None else []

    if _states(analysis, prelude) != {HELD}:
        return None
    for span in (init, test, step):
        if span is not None and lock_calls(parsed.text(*span), vocab):
            return None
    construct = Construct(loop)
    analysis.constructs.append(construct)
    held_states = _states(analysis, children[:u])
    retaken_states = _states(analysis, children[r + 1:])
    analysis.constructs.pop()
    if RELEASED in held_states | retaken_states or analysis.problems:
        return None
    if final is None:
        # nothing releases the lock after the loop: it must only leave through exits
        if construct.breaks_held or not (test is None or loop_is_infinite(loop, child_nodes(loop))):
            return None
    else:
        if construct.breaks_released or _states(analysis, between) != {HELD} or analysis.problems:
            return None
    lbrace, rbrace = body.extent.start.offset + 1, body.extent.end.offset - 1
    unlock, relock = stmt_range(parsed, children[u]), stmt_range(parsed, children[r])
    released_span = (unlock[1], relock[0])
    if _jumps_to_loop(children[u + 1:r], continue_only=final is None):
        return None
    pieces = [(lbrace, unlock[0]), released_span, (relock[1], rbrace)]
    if _locals_shared(parsed, body, pieces):
        return None
    loop_end = loop.extent.end.offset
    if final is not None:
        final_start, final_end = stmt_range(parsed, rest[final])
        final_op = analysis.op_of(unlabeled(rest[final]))
        region.body_end, region.end = final_start, final_end
        region.end_result, region.end_work = final_op.result, final_op.work
        region.end_work_of = final_op.wrapper if final_op.work else None
    else:
        region.body_end = region.end = loop_end
    region.body_end_stmt = region.end
    region.loop = LoopParts(loop, (region.lock_end, loop.extent.start.offset), init, test, step,
                            pieces[0], unlock, released_span, relock, pieces[2],
                            (loop_end, region.body_end) if final is not None else None, unlock_op, relock_op)
    return analysis


def _states(analysis: RegionAnalysis, statements: list[ci.Cursor]) -> set[str]:
    """The states after statements entered holding the lock ({HELD}: every path still holds it;
    empty: every path left by an exit).  A lone unlock statement ends its path as an exit."""
    if not statements:
        return {HELD}
    return analysis.block(statements, is_switch_body=False)


def _relocks_inside(parsed: ParsedFile, vocab: Vocabulary, loop: ci.Cursor, key: str) -> bool:
    text = parsed.text(loop.extent.start.offset, loop.extent.end.offset)
    return any(op.key == key and op.kind == "lock" for op in lock_calls(text, vocab))


def _header(parsed: ParsedFile, loop: ci.Cursor) -> tuple[Span | None, Span | None, Span | None] | None:
    """(first clause, test, step) of a `while` or `for` as written; None for a `for` that declares
    variables (their scope is the loop: B could not see them) or a header from a macro."""
    start = loop.extent.start.offset
    body = child_nodes(loop)[-1]
    text = parsed.text(start, body.extent.start.offset)
    tokens = tokenize(text)
    keyword = "while" if loop.kind == K.WHILE_STMT else "for"
    if len(tokens) < 3 or tokens[0].text != keyword or tokens[1].text != "(":
        return None
    close = matching_bracket(tokens, 1)
    if close != len(tokens) - 1:
        return None

    def span(a: int, b: int) -> Span | None:
        inner = text[a:b]
        if not inner.strip():
            return None
        lead = len(inner) - len(inner.lstrip())
        return start + a + lead, start + a + len(inner.rstrip())

    if keyword == "while":
        return None, span(tokens[1].end, tokens[close].start), None
    clauses = top_level_split(text[tokens[1].end : tokens[close].start], ";")
    if len(clauses) != 3:
        return None
    starts = [tokens[1].end, tokens[1].end + len(clauses[0]) + 1]
    starts.append(starts[1] + len(clauses[1]) + 1)
    first, test, step = (span(a, a + len(c)) for a, c in zip(starts, clauses))
    if first is not None and any(c.kind == K.DECL_STMT for c in child_nodes(loop)):
        return None
    return first, test, step


def _jumps_to_loop(statements: list[ci.Cursor], continue_only: bool) -> bool:
    """Does B `continue` the loop (or `break` it, unless continue_only)?  Jumps of B's own loops
    and switches do not count."""
    def visit(node: ci.Cursor, in_loop: bool, in_breakable: bool) -> bool:
        if node.kind == K.CONTINUE_STMT and not in_loop:
            return True
        if node.kind == K.BREAK_STMT and not in_breakable and not continue_only:
            return True
        loop = node.kind in (K.WHILE_STMT, K.FOR_STMT, K.DO_STMT)
        return any(visit(c, in_loop or loop, in_breakable or loop or node.kind == K.SWITCH_STMT)
                   for c in child_nodes(node))
    return any(visit(s, False, False) for s in statements)


def _locals_shared(parsed: ParsedFile, body: ci.Cursor, pieces: list[Span]) -> bool:
    """Is a variable declared at the body's top level in one of A, B, D used in another?  The
    section and the caller each see only their own."""
    for stmt in child_nodes(body):
        if stmt.kind != K.DECL_STMT:
            continue
        offset = stmt.extent.start.offset
        names = {c.spelling for c in child_nodes(stmt) if c.kind == K.VAR_DECL}
        for a, b in pieces:
            if a <= offset < b:
                others = " ".join(parsed.text(x, y) for x, y in pieces if (x, y) != (a, b))
                if names & identifiers_used(others):
                    return True
    return False


def _loop_body(renderer, region: Region, exit_edits: list[tuple[int, int, str]]) -> str:
    parts = region.loop
    edits = exit_edits + [(a, b, "\n") for a, b in region.blank_directives]

    def text(span: tuple[int, int] | None) -> str:
        if span is None:
            return ""
        return f"#line {renderer.code_line(span[0])}\n" + renderer.render_range(*span, edits).strip("\n") + "\n"

    def expression(span: tuple[int, int] | None) -> str:
        return renderer.render_range(*span) if span is not None else ""

    run_b = len(region.exits) + 1
    step = f", {expression(parts.step)}" if parts.step is not None else ""
    test = f"if (!({expression(parts.test)}))\n            break;\n" if parts.test is not None else ""
    unlock_work = f"{parts.unlock_op.work}\n" if parts.unlock_op.work else ""
    relock_work = f"{parts.relock_op.work}\n" if parts.relock_op.work else ""
    relock_result = f"{parts.relock_op.result}\n" if parts.relock_op.result else ""
    # C89 trees (libuv builds with -std=gnu89): no declaration in a for's first clause
    lock_work = f"{region.lock.work}\n" if region.lock.work else ""
    return (f"    if (!rclify_resume) {{\n{lock_work}{text(parts.prelude)}"
            + (f"        {expression(parts.init)};\n" if parts.init is not None else "")
            + f"    }}\n    {{\n    int rclify_pass;\n    for (rclify_pass = rclify_resume; ; rclify_pass = 0{step}) {{\n"
            + f"        if (rclify_pass) {{\n{relock_result}{relock_work}{text(parts.retaken)}            continue;\n        }}\n"
            + f"        {test}{text(parts.held)}{unlock_work}        return {run_b};\n    }}\n    }}\n"
            + text(parts.after))


def released_text(renderer, region: Region) -> str:
    """B, run by the caller between two runs of a loop-carried section, with the mid-loop
    unlock's result kept (`err = 0;`)."""
    parts = region.loop
    result = f"{parts.unlock_op.result} " if parts.unlock_op.result else ""
    blanks = [(a, b, "\n") for a, b in region.blank_directives]
    return result + renderer.render_range(*parts.released, blanks).strip()
