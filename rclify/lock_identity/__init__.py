"""Lock identity: which lock each lock site is, named by where it is created.

One entry of lock_config.h per allocation site (lock_table.py, lock_site.py), through the
program's lock helpers (lock_helpers/: a function that creates a lock for its caller gives one
entry per call), the mutex fields of file-scope struct variables (struct_instances.py) and the
zero-filled locks (zero_initialised_locks.py).  The transform builds the table; the profiler
(rclify/profiling/) names the locks it measures with the same ids; spatch's embedded Python
(semantic_patches/api/*.cocci) reads the table while it rewrites the lock API.  That Python has
neither libclang nor jinja2: nothing here imports them, and this __init__ imports nothing
(tests/test_light_imports.py checks it).
"""
