"""The pthread mutex, condition-variable and rwlock API as rclify treats it: one row per function.

Every list of these names in the pipeline is derived from API (the vocabulary's lock operations,
discovery's site kinds, the condvar waits, the calls that keep a lock posix, the server
allowlist), and tests/test_pthread_api.py checks the semantic patches against it.  Each function's
runtime twin is `rcl_` + its name without `pthread_` (rclify.h).
"""

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Function:
    name: str
    kind: str  # lock, unlock, trylock, timedlock, init, destroy, wait, signal, repair (robust, ceilings),
    #            rwlock (an rwlock call: renamed to the runtime's, its regions left hybrid)
    arity: int
    discovered_as: str = ""  # the site kind discovery records (discover.py), "" when it does not

    @property
    def runtime(self) -> str:
        """Its twin in the runtime (rclify.h)."""
        return "rcl_" + self.name[len("pthread_"):]

    @property
    def waits(self) -> bool:
        """Blocks on a condition variable (a section reaching it never runs on a combiner)."""
        return self.kind == "wait"


API = (
    Function("pthread_mutex_init", "init", 2, "mutex_init"),
    Function("pthread_mutex_lock", "lock", 1, "lock"),
    Function("pthread_mutex_trylock", "trylock", 1, "trylock"),
    Function("pthread_mutex_timedlock", "timedlock", 2),  # may time out: never extracted
    Function("pthread_mutex_clocklock", "timedlock", 3),
    Function("pthread_mutex_unlock", "unlock", 1, "unlock"),
    Function("pthread_mutex_destroy", "destroy", 1, "mutex_destroy"),
    # through these a program relies on pthread's own behaviour of a lock (kept_posix.py)
    Function("pthread_mutex_consistent", "repair", 1),
    Function("pthread_mutex_consistent_np", "repair", 1),
    Function("pthread_mutex_getprioceiling", "repair", 2),
    Function("pthread_mutex_setprioceiling", "repair", 3),
    Function("pthread_cond_init", "init", 2, "cond_init"),
    Function("pthread_cond_wait", "wait", 2, "cond_wait"),
    Function("pthread_cond_timedwait", "wait", 3, "cond_timedwait"),
    Function("pthread_cond_clockwait", "wait", 4),
    Function("pthread_cond_signal", "signal", 1, "cond_signal"),
    Function("pthread_cond_broadcast", "signal", 1, "cond_broadcast"),
    Function("pthread_cond_destroy", "destroy", 1, "cond_destroy"),
    # reader-writer locks: rcl_rwlock_t, one lock_config.h entry per allocation site like a mutex
    # (its init takes the entry); its calls are renamed, their sections stay hybrid (docs/transform.md,
    # "Reader-writer locks").  Discovery records them as rwlock sites (discover/pthread_sites.cocci),
    # not as the mutex kinds: the vocabulary, the regions and the analysis of where a section runs
    # know nothing of them.
    Function("pthread_rwlock_init", "rwlock", 2),
    Function("pthread_rwlock_rdlock", "rwlock", 1),
    Function("pthread_rwlock_wrlock", "rwlock", 1),
    Function("pthread_rwlock_tryrdlock", "rwlock", 1),
    Function("pthread_rwlock_trywrlock", "rwlock", 1),
    Function("pthread_rwlock_timedrdlock", "rwlock", 2),
    Function("pthread_rwlock_timedwrlock", "rwlock", 2),
    Function("pthread_rwlock_clockrdlock", "rwlock", 3),
    Function("pthread_rwlock_clockwrlock", "rwlock", 3),
    Function("pthread_rwlock_unlock", "rwlock", 1),
    Function("pthread_rwlock_destroy", "rwlock", 1),
)
BY_NAME = {f.name: f for f in API}

# what a statement of these does to its lock (lock_statements/), and the arity when not 1
LOCK_OPERATIONS = {f.name: f.kind for f in API if f.kind in ("lock", "unlock", "trylock", "timedlock")}
LOCK_ARITY = {f.name: f.arity for f in API if f.name in LOCK_OPERATIONS and f.arity != 1}
DISCOVERED = {f.name: f.discovered_as for f in API if f.discovered_as}  # discover.py's site kinds
WAITS = frozenset(f.name for f in API if f.waits) | frozenset(f.runtime for f in API if f.waits)
KEEP_POSIX = tuple(f.name for f in API if f.kind == "repair")  # kept_posix.py
RWLOCK = tuple(f.name for f in API if f.kind == "rwlock")  # the rwlock calls (lock_table.py: their inits)
# a call of the mutex or condvar API in a text (discover.py's safety net, build_flags/'s test of
# which build compiles the files that lock)
CALL = re.compile(r"\bpthread_(?:mutex|cond)_\w+\s*\(")
