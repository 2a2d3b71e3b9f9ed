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
by the walk itself (region_walk.py).  region_close and region_checks ask those steps and some
shapes use them back; the lists the walk and render.py ask (STARTS, SHAPES, BODY_ORDER) are
registry.py's, not this package's, so that importing one shape imports no other: the imports
have no cycle (tests/test_shapes.py checks it).

What a shape reads of its region for its own rendering is its module's small dataclass, kept in
the region's one slot for it (Shape.keep, Shape.data: Region.shape_data, by the shape's name;
regions.py says why a slot and which fields stay Region's).

render.py asks SHAPES' applies, body (BODY_ORDER), call_site and conditions (the #if lines a
section's function exists under).  Why moving each is sound is
written in docs/transform.md.  Each shape names its extraction fixture
(tests/fixtures/extract/<fixture>/): tests/test_shapes.py fails for a shape without one, or whose
fixture has no region of the shape.
"""
