"""The shapes' registry: which shapes the walk asks where regions start (STARTS), which render.py
asks how a section and its call site are written (SHAPES, BODY_ORDER).  A module of its own, not
the package's __init__: importing a shape (region_close.py and region_checks.py import some)
imports no other."""

from rclify.transform.shapes import (cleanup_pop, conditional_lock, conditional_macro, flag_conditional, guard,
                                     loop_carried, open_block, scoped, statement_macro, trylock, variadic_reads,
                                     windows)
from rclify.transform.shapes.shape import Shape

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
