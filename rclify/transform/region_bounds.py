"""Where a function's critical regions start and end.

A region starts at a lock statement (or a trylock's `if`) and ends where the lock is released on
every path: at the unlock statement in the same block, or at a statement all of whose paths
release it.  RegionAnalysis (region_walk.py) walks what lies between; region_checks.py checks
each region once its end is known, and, once every region is known, the whole function (labels
targeted from outside, split #if pairs).
"""

import dataclasses

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.cursors import child_nodes, preorder
from rclify.ctext.tokens import identifiers_used, matching_bracket, normalize, tokenize
from rclify.transform.cancellation_cleanups import check_cancellation_cleanups
from rclify.transform.lock_statements.calls import classify
from rclify.transform.lock_statements.checked import checks_result
from rclify.transform.lock_statements.guards import guard_lock
from rclify.transform.loop_regions import loop_region
from rclify.transform.refusals import Reason
from rclify.transform.region_checks import check_labels, check_nested_exits, check_preprocessor, finish_region
from rclify.transform.region_walk import HELD, RELEASED, RegionAnalysis
from rclify.transform.regions import Region, may_be_lock, scoped_statement, tail_extent, unlabeled
from rclify.transform.shapes import STARTS, StatementAt, open_block, variadic_reads
from rclify.transform.shapes.variadic_reads import VA
from rclify.transform.vocabulary import TIMED_LOCKS, LockOp, Vocabulary

K = ci.CursorKind


def find_regions(parsed: ParsedFile, function: ci.Cursor, vocab: Vocabulary) -> list[Region]:
    """Every region of the function, outermost first, each with its problems (if any)."""
    body = next((c for c in child_nodes(function) if c.kind == K.COMPOUND_STMT), None)
    if body is None:
        return []
    regions: list[Region] = []
    claimed: list[tuple[int, int]] = []  # lock statements, whole regions: blocks inside are a macro's braces
    relocks: set[int] = set()
    for compound in (n for n in preorder(body) if n.kind == K.COMPOUND_STMT):
        if any(s <= compound.extent.start.offset < e for s, e in claimed):
            continue
        children = child_nodes(compound)
        for i, child in enumerate(children):
            inner = unlabeled(child)
            start, end = stmt_range(parsed, inner)
            if any(s <= start < e for s, e in claimed):
                continue  # a statement of a macro's expansion whose invocation is a region already
            op = classify(parsed.text(start, end), vocab) if may_be_lock(inner) else None
            if op is not None:
                claimed.append((start, end))
                if op.kind == "unlock" or start in relocks:
                    continue  # a loop-carried section's relock is part of it
            region = _region_started_at(StatementAt(parsed, vocab, function, compound, children, i, op,
                                                    compound == body), claimed)
            if region is None:
                continue
            regions.append(region)
            if region.loop is not None:
                relocks.add(region.loop.relock[0])
            if region.extractable:  # a window's relock is part of the region (an exit's would not be)
                relocks.update(w.released[1] for w in region.windows)
    for shape in STARTS:
        for region in shape.regions_in(parsed, vocab, function, body):
            region.started_by = shape.name
            regions.append(region)
    regions += _timed_lock_regions(parsed, vocab, function, body, regions)
    check_nested_exits(regions)
    check_labels(parsed, function, regions)
    check_preprocessor(parsed, regions)
    check_cancellation_cleanups(parsed, vocab, body, regions)
    error_line = parsed.first_error_in(function)
    if error_line is not None:
        for region in regions:
            region.refuse(Reason.PARSE_ERRORS, error_line, first=True)
    return sorted(regions, key=lambda r: r.start)


def _region_started_at(at: StatementAt, claimed: list[tuple[int, int]]) -> Region | None:
    """The region of the first shape of STARTS that starts one at the statement; else a lock
    statement's own (_region_at); else None."""
    for shape in STARTS:
        region = shape.region_at(at)
        if region is not None:
            region.started_by = shape.name
            if shape.claims_statement:
                claimed.append(stmt_range(at.parsed, at.statement))
            return region
    if at.op is None:
        return None
    return _region_at(at.parsed, at.vocab, at.function, at.compound, at.children, at.i, at.op, at.in_function_body)


def _region_at(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, compound: ci.Cursor,
               children: list[ci.Cursor], i: int, op: LockOp, is_function_body: bool) -> Region:
    """The region a lock statement (children[i]) opens."""
    lock_cursor = unlabeled(children[i])
    start, lock_end = stmt_range(parsed, lock_cursor)
    region = Region(parsed, function, compound, op, start, lock_end, lock_end, lock_end,
                    lock_cursor.extent.start.line)
    if op.kind in ("trylock", "timedlock"):
        region.refuse(Reason.TRYLOCK if op.kind == "trylock" else Reason.TIMEDLOCK, region.line)
        return region
    following = children[i + 1 :]
    if following and checks_result(parsed.text(*stmt_range(parsed, following[0])), op):
        region.lock_end = stmt_range(parsed, following[0])[1]  # dead once the runtime has the lock
        following = following[1:]
    reason = Reason.LOCK_UNLOCK_IN_DIFFERENT_FUNCTIONS if is_function_body else Reason.UNBALANCED_REGION
    fresh = dataclasses.replace(region, exits=[], problems=[], windows=[], blank_directives=[])
    _close(parsed, vocab, region, following, reason)
    if region.problems and (loop := loop_region(parsed, vocab, region, following)) is not None:
        region.lifted = None  # a loop-carried section's pieces keep their text: va_list refused
        finish_region(region, loop)  # a worker's loop: unlocked and locked again in its body
    elif region.problems:
        # unlocked and relocked inside (windows), the plain region's shapes and a loop's aside
        _close(parsed, vocab, fresh, following, reason, windows=True)
        if fresh.windows:  # extractable, or refused for what keeps its windows from being resumed
            return fresh
    return region


def _scoped_region_at(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, compound: ci.Cursor,
                      stmt: ci.Cursor) -> Region | None:
    """`WITH_LOCK(m) { ... }` (lock_statements.scoped_lock): a `for` that locks in its first clause
    and unlocks in its third.  The section is the body (a block's statements, or the one
    statement); a `continue` of that `for` is an early exit (the third clause unlocks, the loop
    ends), a `break` leaves with the lock held."""
    scoped = scoped_statement(parsed, stmt, vocab)
    if scoped is None:
        return None
    op, body, loop = scoped
    start, end = stmt_range(parsed, stmt)
    if body.kind == K.COMPOUND_STMT:
        lock_end, body_end, end = body.extent.start.offset + 1, body.extent.end.offset - 1, body.extent.end.offset
        statements = child_nodes(body)
    else:
        lock_end, (_, body_end) = body.extent.start.offset, stmt_range(parsed, body)
        end = body_end
        statements = [body]
    region = Region(parsed, function, compound, op, start, lock_end, body_end, end, stmt.extent.start.line)
    region.body_end_stmt = end
    analysis = RegionAnalysis(parsed, vocab, op.key, scope=loop, scope_breaks_release=loop is not stmt)
    states = analysis.block(statements, is_switch_body=False)
    if RELEASED in states:
        analysis.refuse(Reason.UNBALANCED_REGION, region.line)  # the third clause unlocks again
    finish_region(region, analysis)
    return region


def _scoped_bodies(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, body: ci.Cursor) -> list[Region]:
    """Scoped lock statements that are no block's statement, but an if's or a loop's body
    (`if (c) WITH_LOCK(m) x++;`); their home is the nearest enclosing block."""
    found: list[Region] = []
    in_block = (K.COMPOUND_STMT, K.LABEL_STMT, K.CASE_STMT, K.DEFAULT_STMT)  # the block loop sees those

    def visit(node: ci.Cursor, compound: ci.Cursor) -> None:
        here = node if node.kind == K.COMPOUND_STMT else compound
        for child in child_nodes(node):
            if child.kind == K.FOR_STMT and node.kind not in in_block:
                region = _scoped_region_at(parsed, vocab, function, here, child)
                if region is not None:
                    found.append(region)
            visit(child, here)

    visit(body, body)
    return found


def _guard_region_at(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, compound: ci.Cursor,
                     children: list[ci.Cursor], i: int) -> Region | None:
    """`GUARD(m);` (lock_statements.guard_lock): a `__attribute__((cleanup))` variable that holds the
    lock to the end of its block.  The section is the rest of the block; a return, break, continue
    or goto out of it is an exit (the cleanup unlocks there), a return's value computed in the
    section."""
    stmt = unlabeled(children[i])
    if stmt.kind != K.DECL_STMT:
        return None
    start, lock_end = stmt_range(parsed, stmt)
    guard = guard_lock(parsed.text(start, lock_end), vocab)
    if guard is None:
        return None
    body_end = compound.extent.end.offset - 1  # the block's `}`
    region = Region(parsed, function, compound, guard.op, start, lock_end, body_end, body_end, stmt.extent.start.line)
    region.body_end_stmt = body_end
    analysis = RegionAnalysis(parsed, vocab, guard.op.key, guard=(lock_end, body_end))
    region.ends_by_exit = not analysis.block(children[i + 1 :], is_switch_body=False) and bool(analysis.exits)
    if any(c.kind in (K.CASE_STMT, K.DEFAULT_STMT) for c in children[i + 1 :]):
        analysis.refuse(Reason.LABEL_IN_REGION, region.line)
    uses = [t for t in tokenize(parsed.text(lock_end, body_end)) if t.text == guard.variable]
    if uses or guard.release.work:  # the variable disappears with the section; work needs it
        analysis.refuse(Reason.CLEANUP_GUARD, region.line)
    if any(e.value for e in analysis.exits) and "(anonymous" in function.result_type.spelling:
        analysis.refuse(Reason.CLEANUP_GUARD, region.line)  # no variable can hold the value
    finish_region(region, analysis)
    return region


def _timed_lock_regions(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, body: ci.Cursor,
                        regions: list[Region]) -> list[Region]:
    """pthread_mutex_timedlock / _clocklock calls in any shape no region starts with (`if
    (pthread_mutex_timedlock(&m, &ts) == 0) {...}`, `rc = ...`, a loop condition, a macro): each is
    a region of its own statement, refused (timedlock) so that the report names the call.  The
    runtime's rcl_mutex_timedlock takes the lock in hybrid mode; nothing is extracted around it
    (its failure path, ETIMEDOUT, is ordinary control flow the caller runs)."""
    found: list[Region] = []

    def visit(node: ci.Cursor, compound: ci.Cursor | None, stmt: ci.Cursor | None) -> None:
        for child in child_nodes(node):
            here, top = (node, child) if node.kind == K.COMPOUND_STMT else (compound, stmt)
            if child.kind == K.CALL_EXPR and child.spelling in TIMED_LOCKS and top is not None:
                at = child.extent.start.offset
                if not any(r.start <= at < max(r.lock_end, r.start + 1) for r in [*regions, *found]):
                    found.append(_timed_region(parsed, vocab, function, here, unlabeled(top), child))
            visit(child, here, top)

    visit(body, None, None)
    return found


def _timed_region(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, compound: ci.Cursor,
                  stmt: ci.Cursor, call: ci.Cursor) -> Region:
    start, end = stmt_range(parsed, stmt)
    mutex = _timed_mutex(parsed, vocab, call, parsed.text(start, end))
    op = LockOp("timedlock", mutex, normalize(mutex))
    region = Region(parsed, function, compound, op, start, end, end, end, call.extent.start.line)
    region.body_end_stmt = end
    region.refuse(Reason.TIMEDLOCK, region.line)
    return region


def _timed_mutex(parsed: ParsedFile, vocab: Vocabulary, call: ci.Cursor, statement: str) -> str:
    """The mutex argument of a timed lock call as written; for a call inside a macro expansion
    (its arguments located at the invocation), the lock macro's own expansion says it."""
    args = list(call.get_arguments())
    if args and args[0].extent.start.offset != call.extent.start.offset:
        return parsed.text(args[0].extent.start.offset, args[0].extent.end.offset).strip()
    tokens = tokenize(statement)
    for i, tok in enumerate(tokens[:-1]):
        if tok.text in vocab.macros and tokens[i + 1].text == "(":
            close = matching_bracket(tokens, i + 1)
            op = classify(statement[tok.start : tokens[close].end], vocab) if close > 0 else None
            if op is not None and op.kind == "timedlock":
                return op.mutex
    return ""


def _trylock_region_at(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, compound: ci.Cursor,
                       if_stmt: ci.Cursor) -> Region | None:
    """`if (pthread_mutex_trylock(&m) == 0) { ...; unlock; ... } [else ...]`: the section is the
    then-block up to its unlock; the rest of the block and the else branch run in the caller."""
    children = child_nodes(if_stmt)
    if len(children) < 2 or children[1].kind != K.COMPOUND_STMT:
        return None
    op = _trylock_condition(parsed, children[0], vocab)
    if op is None:
        return None
    then = children[1]
    start, end = stmt_range(parsed, if_stmt)
    open_brace = then.extent.start.offset + 1
    region = Region(parsed, function, compound, op, start, open_brace, open_brace, end,
                    if_stmt.extent.start.line, is_trylock=True)
    _close(parsed, vocab, region, child_nodes(then), Reason.UNBALANCED_REGION)
    # what stays in the caller: the then-block after the section, and the else branch
    region.after = (region.body_end_stmt, then.extent.end.offset - 1)
    if len(children) > 2:
        region.otherwise = stmt_range(parsed, children[2])
    region.end = end
    return region


def _trylock_condition(parsed: ParsedFile, cond: ci.Cursor, vocab: Vocabulary) -> LockOp | None:
    tokens = tokenize(parsed.text(cond.extent.start.offset, cond.extent.end.offset))
    texts = [t.text for t in tokens]
    if texts[-2:] == ["==", "0"]:
        call = tokens[:-2]
    elif texts[:2] == ["0", "=="]:
        call = tokens[2:]
    elif texts[:1] == ["!"]:
        call = tokens[1:]
    else:
        return None
    if not call:
        return None
    op = classify(parsed.text(cond.extent.start.offset + call[0].start, cond.extent.start.offset + call[-1].end), vocab)
    return op if op is not None and op.kind == "trylock" else None


def _close(parsed: ParsedFile, vocab: Vocabulary, region: Region, following: list[ci.Cursor],
           unended_reason: Reason, windows: bool = False) -> None:
    """Walks the statements after the lock until it is released on every path; records the
    region's end, its exits, its windows (when asked for) and its problems."""
    op = region.lock
    analysis = RegionAnalysis(parsed, vocab, op.key, windows=windows)
    ended = False
    i = -1
    while i + 1 < len(following):
        i += 1
        child = following[i]
        if child.kind in (K.CASE_STMT, K.DEFAULT_STMT):
            analysis.problem(Reason.LABEL_IN_REGION, child)
            break
        inner = unlabeled(child)
        child_op = analysis.op_of(inner)
        if child_op is not None and child_op.key == op.key and child_op.kind == "unlock" \
                and _held_label_after_exit(analysis, following, i) is not None:
            # `unlock; return; error: <locked>; unlock;`: a goto of the section reaches the label
            # with the lock held: this unlock and its tail are an exit, the section goes on there
            analysis.unlock_effects += child_op.effect_vars
            i = analysis.exit_at(following, i, child_op) - 1
            continue
        if child_op is not None and child_op.key == op.key and child_op.kind == "unlock":
            # `out_unlock: unlock(&m);`: a goto of the section to the label ends the section there
            region.end_label = inner is not child and child.kind == K.LABEL_STMT
            region.body_end = stmt_range(parsed, inner if region.end_label else child)[0]
            region.end = stmt_range(parsed, inner)[1]
            region.unlock_effects = list(child_op.effect_vars)
            region.end_result = child_op.result
            region.end_work = child_op.work
            region.end_work_of = child_op.wrapper if child_op.work else None
            ended = True
            break
        if (at := open_block.unlock_in_bare_block(analysis, child, op.key)) is not None:
            # `{ T x = ...; unlock(&m); use(x); }`: the section ends at that unlock (zstd's POOL_thread)
            block = child_nodes(child)
            if analysis.block(block[:at], is_switch_body=False) == {HELD}:
                unlock = unlabeled(block[at])
                unlock_op = analysis.op_of(unlock)
                region.body_end, region.end = stmt_range(parsed, block[at])[0], stmt_range(parsed, unlock)[1]
                region.end_result, region.end_work = unlock_op.result, unlock_op.work
                region.end_work_of = unlock_op.wrapper if unlock_op.work else None
                region.open_block = child
                ended = True
            break
        states = analysis.stmt(child)
        if states == {RELEASED} or not states:
            region.body_end = region.end = stmt_range(parsed, child)[1]
            # `while (1) { ... unlock; return v; }`: no path falls through, the section ends by its
            # exits only (the call site takes the last one unconditionally: no -Wreturn-type)
            region.ends_by_exit = not states and bool(analysis.exits) and not region.is_trylock
            ended = True
            break
        if RELEASED in states:
            break  # unbalanced: already reported
    if not ended and not analysis.problems:
        analysis.refuse(unended_reason, region.line)
    if not ended:
        region.body_end = region.end = region.lock_end
    region.body_end_stmt = region.end
    if ended and not region.is_trylock and identifiers_used(parsed.text(region.lock_end, region.body_end)) & VA:
        region.lifted = variadic_reads.lifted_reads(parsed, region, analysis, following)
    finish_region(region, analysis)


def _held_label_after_exit(analysis: RegionAnalysis, following: list[ci.Cursor], i: int) -> int | None:
    """The index of the statement after the unlock following[i] when it is `unlock; <tail>;
    jump;` followed by a label that a goto of the section, taken with the lock held, targets
    (nng's `goto error; ... unlock; return; error: cleanup; unlock;`); else None."""
    after, ends_with_jump = tail_extent(following, i)
    label = following[after] if ends_with_jump and after < len(following) else None
    held = {name for name, _ in analysis.gotos_held}
    return after if label is not None and label.kind == K.LABEL_STMT and label.spelling in held else None
