"""Reading a statement as a lock operation, through the tree's vocabulary (vocabulary.py): one
module per lock idiom, a way real code writes a lock statement.

  calls.py      classify, lock_calls: the plain call `pthread_mutex_lock(&m);` and what only wraps
                it: lock macros (with `##`, `#`, __VA_ARGS__), wrapper functions, braces,
                `do { } while (0)`, `(void)`, a macro of the tree given a lock call; an unlock whose
                argument increments a variable (`unlock(&slots[i++].m);`)
  checked.py    the checked forms, whose failure path ends the program: `if (lock(m)) abort();`,
                `assert(lock(m) == 0)`, `lock(m) || die()`, `err = lock(m);` and, on the next
                statement, `if (err) ...` (checks_result)
  scoped.py     scoped lock statements, a `for` (as written or from a macro) that holds a lock for
                its block: `WITH_LOCK(m) { ... }`, xz's `mythread_sync(m) { ... }`
  guards.py     cleanup guards: `GUARD(m);`, an `__attribute__((cleanup))` variable holding the lock
                to the end of its block
  expansion.py  what they share: a macro's body as invoked (substitute), a statement's tokens within
                the expansion depth, the #if lines a lock was read through

Imports go one way, expansion <- checked <- calls <- scoped, guards: classify hands itself to the
checked forms it dispatches to, which read the call inside with it (checked.Classify).
"""
