"""Region shapes: for each way real code writes a critical section that is more than
`lock; statements; unlock;` in one block, how its extracted section's body and its call site are
written.  One module per idiom; render.py's extraction asks them in SHAPES' order:

  statement_macro  a statement macro whose expansion is the section (`JOB_LOCKED(e);`)
  loop_carried     a worker loop that unlocks and relocks in its body: one section run per round
  open_block       a bare block the section ends in: its `{` stays in the caller
  variadic_reads   `va_start .. va_arg .. va_end` of the region, run before the lock
  conditional_lock lock and unlock each alone in an `#if THREADS` block
  conditional_macro a lock macro defined so under some #if conditions only (zstd's DEBUGLEVEL)
  cleanup_pop      `pthread_cleanup_pop(1)` as the region's unlock
  windows          unlock/relock windows inside a region: one resumable section (with
                   loop_carried, the resumable ones: their B runs in the caller between two runs)

Where a region of the shape starts and ends is in the shape's module too where it is a step of
its own that region_bounds.py's walk asks for (statement_macro.region_at,
open_block.unlock_in_bare_block, variadic_reads.lifted_reads,
conditional_lock.widen_to_conditional_locks); loop-carried sections are bounded by
loop_regions.py, cleanup-pop ones by cancellation_cleanups.py, windows by the walk itself
(region_walk.py).  Why moving each is sound is written in docs/transform.md.  Each shape names its extraction fixture (tests/fixtures/extract/<fixture>/):
tests/test_shapes.py fails for a shape without one, or whose fixture has no region of the shape.
"""

from rclify.transform.shapes import (cleanup_pop, conditional_lock, conditional_macro, guard, loop_carried, open_block,
                                     scoped, statement_macro, trylock, variadic_reads, windows)
from rclify.transform.shapes.shape import Shape, StatementAt, Writing

# Where regions start: region_bounds.py's walk asks each statement of each block of a function
# these shapes' region_at in this order and takes the first region one returns (a lock statement
# none of them starts is a plain region, the walk's own); once the walk is done, their regions_in,
# in this order, for the regions no block's statement starts
STARTS: list[Shape] = [trylock.SHAPE, scoped.SHAPE, guard.SHAPE, statement_macro.SHAPE, cleanup_pop.SHAPE]

# Each shape that applies wraps the call site, in this order (a statement macro's call is one
# statement before the variadic reads go before it and an #if around it)
SHAPES: list[Shape] = [open_block.SHAPE, statement_macro.SHAPE, loop_carried.SHAPE, variadic_reads.SHAPE,
                       conditional_lock.SHAPE, conditional_macro.SHAPE, cleanup_pop.SHAPE, windows.SHAPE,
                       trylock.SHAPE, scoped.SHAPE, guard.SHAPE]
# the body: the first of these that applies writes it (else the region's own text, with its edits)
BODY_ORDER: list[Shape] = [statement_macro.SHAPE, loop_carried.SHAPE, open_block.SHAPE]

__all__ = ["BODY_ORDER", "SHAPES", "STARTS", "Shape", "StatementAt", "Writing"]
