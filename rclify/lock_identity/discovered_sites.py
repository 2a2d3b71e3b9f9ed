"""What discovery (rclify/transform/discover.py, spatch) finds in a tree: every definition, init
and call of the pthread mutex / condvar API, by file and line.  Here, below both, because the
lock table (lock_table.py) reads them as much as the transform does."""

from dataclasses import dataclass

KINDS = (
    "lock", "unlock", "trylock", "mutex_init", "mutex_destroy", "static_mutex", "mutex_var",
    "cond_wait", "cond_timedwait", "cond_signal", "cond_broadcast", "cond_init", "cond_destroy",
    "static_cond", "other_mutex_api", "rwlock_api", "spin_api",
)
NOT_HANDLED = {"spin_api": "pthread_spin"}  # kinds rclify leaves alone
# pthread_rwlock_* calls: renamed to the runtime's rcl_rwlock_* (each rwlock a lock_config.h entry),
# their sections left hybrid; the report lists each with that reason
RWLOCK_CALLS = "rwlock_api"
RWLOCK_HYBRID = "rwlock sections are not extracted yet: the call is rcl_rwlock_*, correct on every algorithm"


@dataclass(frozen=True)
class Site:
    kind: str  # one of KINDS
    file: str  # path relative to the tree root
    line: int  # 1-based
    column: int  # 0-based, as spatch reports
    function: str  # enclosing function, '' at file scope (and in macro bodies)
    expr: str  # the lock/cond expression as written (first argument), or the defined name
    args: tuple[str, ...] = ()  # every argument as written (cond_wait: (cond, mutex))
    scope: str = ""  # definitions: 'file', 'function' or 'struct NAME' / 'TYPEDEF' for fields
    array: bool = False  # definitions: an array of mutexes
    api: str = ""  # the pthread function called (other_mutex_api: which one), or the definition's type
    init: str = ""  # definitions: the initializer as spatch prints it ('' when there is none)
    static: bool = False  # definitions: declared `static`
    alone: bool = True  # definitions: the only name its declaration defines (not `pthread_mutex_t a, b;`)


@dataclass
class Discovery:
    sites: list[Site]
    failures: dict[str, str]  # file -> first parse error
    seconds: float = 0.0

    def of_kind(self, *kinds: str) -> list[Site]:
        return [s for s in self.sites if s.kind in kinds]
