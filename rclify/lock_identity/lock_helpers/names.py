"""Which definition a call of a name reaches: a function of the tree, a helper (a function, a macro
alias of one, an init macro), and whether a function of the tree can neither create nor take a
lock."""

from rclify.ctext.languages import is_header
from rclify.lock_identity.lock_helpers.c_text import INIT, MAX_MACRO_DEPTH, Source, calls_in
from rclify.lock_identity.lock_helpers.model import Function, Helper, MacroAlias

# what a function of the program a helper calls must not reach (besides the helpers)
_LOCK_API = ("pthread_mutex_", "pthread_rwlock_", "pthread_spin_", "pthread_cond_wait", "pthread_cond_timedwait",
             "pthread_cond_clockwait", "mtx_", "cnd_wait", "cnd_timedwait")


class Names:
    """Which definition a call in a file reaches: a static function of that file (or of a header),
    else the function of that name defined non-static elsewhere; of platform alternatives
    (libuv's src/unix/thread.c and src/win/thread.c both define uv_mutex_init) the one that is a
    helper."""

    def __init__(self, sources: list[Source], tree_macros: dict[str, str] | None = None):
        self.defs: dict[str, list[tuple[Function, bool]]] = {}  # name -> (definition, static)
        self.helper: dict[tuple[str, str], Helper] = {}  # (file, name) -> the helper it defines
        self.code = {src.file: src.code for src in sources}
        self.tree_macros = tree_macros or {}
        self.aliases: dict[str, MacroAlias] = {}  # by macro name (see aliases())
        self.init_macros: dict[str, Helper] = {}  # by macro name (see init_macros())
        self._lockless: dict[tuple[str, str], bool] = {}
        for src in sources:
            for fn in src.functions:
                self.defs.setdefault(fn.name, []).append((fn, fn.static))

    def helper_args(self, name: str, args: list[str]) -> tuple[str, ...] | None:
        """The arguments the helper gets from a call of name (a helper, or a macro alias of one)."""
        alias = self.aliases.get(name) if not self.defs.get(name) else None
        return alias.helper_args(args) if alias is not None else tuple(args)

    def definition(self, name: str, file: str) -> Function | None:
        """The function a call of name in file reaches (as lookup() does for helpers)."""
        defs = self.defs.get(name)
        if not defs:
            return None
        own = [fn for fn, static in defs if static and (fn.file == file or is_header(fn.file))]
        return own[0] if own else next((fn for fn, static in defs if not static), None)

    def lockless(self, name: str, file: str) -> bool:
        """Is name, called in file, a function of the tree that can neither create nor take a
        lock: nothing it calls, through the tree's functions and function-like macros, is the
        pthread lock API (mutexes, condvar waits, rwlocks, spinlocks) or a lock helper?  Calls it
        makes through function pointers and of library functions are not followed (see
        inference._helper_of)."""
        fn = self.definition(name, file)
        if fn is None:
            return False
        key = (fn.file, fn.name)
        if key not in self._lockless:
            self._lockless[key] = True  # a cycle of calls: decided by its other calls
            code = self.code[fn.file]
            self._lockless[key] = all(self._lockless_call(n, fn.file, 0)
                                      for n, _, _ in calls_in(code, fn.body_start, fn.body_end))
        return self._lockless[key]

    def _lockless_call(self, name: str, file: str, depth: int) -> bool:
        if name == INIT or name.startswith(_LOCK_API) or self.lookup(name, file):
            return False
        if self.defs.get(name):
            return self.lockless(name, file)
        body = self.tree_macros.get(name)
        if body is not None and depth <= MAX_MACRO_DEPTH:
            return all(self._lockless_call(n, file, depth + 1) for n, _, _ in calls_in(body, 0, len(body)))
        return True  # a library function (or a function pointer: see inference._helper_of)

    def lookup(self, name: str, file: str) -> Helper | None:
        """The helper a call of name in file reaches: a function, or through a macro alias."""
        defs = self.defs.get(name)
        if not defs:
            alias = self.aliases.get(name)
            if alias is not None and alias.helper != name:
                return self.lookup(alias.helper, file)
            return self.init_macros.get(name)
        own = [fn for fn, static in defs if static and (fn.file == file or is_header(fn.file))]
        if own:
            found = self.helper.get((own[0].file, name))
        else:
            found = next((h for fn, static in defs if not static and (h := self.helper.get((fn.file, name)))), None)
        return found or self.init_macros.get(name)  # a function that is no helper: the macro, if any
