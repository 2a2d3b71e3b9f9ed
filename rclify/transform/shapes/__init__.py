"""Region shapes: for each way real code writes a critical section that is more than
`lock; statements; unlock;` in one block, where its region starts and ends and how its extracted
section's body and its call site are written.  One module per idiom:

  trylock          `if (trylock(&m) == 0) {...} [else ...]`: the section told whether it got the lock
  scoped           `WITH_LOCK(m) {...}`: a `for` that locks in its first clause, unlocks in its third
  guard            a cleanup-attribute variable that holds the lock to the end of its block
  statement_macro  a statement macro whose expansion is the section (`JOB_LOCKED(e);`)
  loop_carried     a worker loop that unlocks and relocks in its body: one section run per round
  open_block       a bare block the section ends in: its `{` stays in the caller
  variadic_reads   `va_start .. va_arg .. va_end` of the region, run before the lock
  conditional_lock lock and unlock each alone in an `#if THREADS` block
  conditional_macro a lock macro defined so under some #if conditions only (zstd's DEBUGLEVEL)
  cleanup_pop      `pthread_cleanup_pop(1)` as the region's unlock
  windows          unlock/relock windows inside a region: one resumable section (with
                   loop_carried, the resumable ones: their B runs in the caller between two runs)
  flag_conditional `if (c) lock(&m); ... if (c) unlock(&m);`: run locked when c holds, its function
                   called directly when not (Shape.run)

Where regions start: region_bounds.py's walk asks each statement of each block the shapes of
STARTS, in order, for the region that starts there (Shape.region_at, given a StatementAt: any
statement, a lock statement or not, and the region may end at any later statement of the block,
its statements walked with RegionAnalysis, region_walk.py, or region_close.close); a lock
statement none starts opens a plain region, the walk's own.  A statement macro claims its
statement (claims_statement): what its expansion holds is not read again.  Regions that no
block's statement starts (a scoped `for` that is an if's or a loop's body) come from regions_in,
asked once per function after the walk: a hook of the shape rather than a visit of the walk's,
since only that idiom looks there and it needs the whole function.  Timed locks are no shape
(always refused, so no fixture could show one extracted): timed_locks.py, asked by the walk last.

The other bounds are steps the walk asks of a shape by name, in the shape's module: where a
region ends inside a bare block (open_block.unlock_in_bare_block, region_close.py), the variadic
reads run before the lock (variadic_reads.lifted_reads, region_close.py), the #if blocks a
region takes in (conditional_lock.widen_to_conditional_locks, region_checks.py), the worker loop
a refused plain region may be (loop_carried.loop_region, region_bounds.py); windows are found
by the walk itself (region_walk.py).  region_close and region_checks ask those steps and the
shapes here import them back: the shapes import them as modules (`from rclify.transform import
region_close`), which works whichever is imported first.

Render.py asks SHAPES' applies, body (BODY_ORDER) and call_site.  Why moving each is sound is
written in docs/transform.md.  Each shape names its extraction fixture
(tests/fixtures/extract/<fixture>/): tests/test_shapes.py fails for a shape without one, or whose
fixture has no region of the shape.
"""

from rclify.transform.shapes import (cleanup_pop, conditional_lock, conditional_macro, flag_conditional, guard,
                                     loop_carried, open_block, scoped, statement_macro, trylock, variadic_reads,
                                     windows)
from rclify.transform.shapes.shape import Shape, StatementAt, Writing

# Where regions start: region_bounds.py's walk asks each statement of each block of a function
# these shapes' region_at in this order and takes the first region one returns (a lock statement
# none of them starts is a plain region, the walk's own); once the walk is done, their regions_in,
# in this order, for the regions no block's statement starts.  A new idiom that may start at a
# statement an earlier one also reads goes after it (an `if` is the trylock's first)
STARTS: list[Shape] = [trylock.SHAPE, scoped.SHAPE, guard.SHAPE, statement_macro.SHAPE, cleanup_pop.SHAPE,
                       flag_conditional.SHAPE]

# Each shape that applies wraps the call site, in this order (a statement macro's call is one
# statement before the variadic reads go before it and an #if around it); trylock, scoped and guard
# change no call site of their own (the trylock's dispatch is render.py's call site template's)
SHAPES: list[Shape] = [open_block.SHAPE, statement_macro.SHAPE, loop_carried.SHAPE, variadic_reads.SHAPE,
                       conditional_lock.SHAPE, conditional_macro.SHAPE, cleanup_pop.SHAPE, windows.SHAPE,
                       trylock.SHAPE, scoped.SHAPE, guard.SHAPE, flag_conditional.SHAPE]
# the body: the first of these that applies writes it (else the region's own text, with its edits)
BODY_ORDER: list[Shape] = [statement_macro.SHAPE, loop_carried.SHAPE, open_block.SHAPE]

__all__ = ["BODY_ORDER", "SHAPES", "STARTS", "Shape", "StatementAt", "Writing"]
