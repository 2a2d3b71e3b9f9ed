"""The lock vocabulary: what counts as a lock operation in this tree (pthread's lock calls, and the
tree's lock macros and wrapper functions) and the lock operation a statement is read as.

The one place where the tree's lock idioms are known: its lock macros and wrapper functions are
inferred (with libclang: vocabulary_inference.py's add_macros, add_wrappers) into a Vocabulary, and
statements are read as lock operations through it (rclify/transform/lock_statements/: classify,
lock_calls, scoped_lock, guard_lock).  analyse.py decides which files to parse; region_walk.py and
region_bounds.py walk what these functions recognise.
"""

import functools
import re
from dataclasses import dataclass, field, replace

from rclify import pthread_api
from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import top_level
from rclify.ctext.tokens import any_of, tokenize

# a lock with a deadline (timedlock: it may fail with ETIMEDOUT) is never extracted, see region_bounds.py
PTHREAD_OPS = pthread_api.LOCK_OPERATIONS
TIMED_LOCKS = {name for name, kind in PTHREAD_OPS.items() if kind == "timedlock"}


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...]
    body: str
    # the #if lines its definition sits under (zstd's ZSTD_pthread_mutex_lock(a) is
    # pthread_mutex_lock((a)) under `#if DEBUGLEVEL < 1`, pthread_mutex_lock(*(a)) else)
    conditions: tuple[str, ...] = ()
    site: tuple[str, int] = ("", -1)  # (file, offset) of its #define, when read with libclang


@dataclass(frozen=True)
class Wrapper:
    """A function that locks or unlocks one expression (see wrapper_shape for what its body may
    hold besides: a check of the result, work of its own, a `return` of the mutex)."""

    name: str
    kind: str
    params: tuple[str, ...]
    param_types: tuple[str, ...]  # type spellings, for the accessor's prototype
    expr: str  # the pthread_mutex_t * expression, in terms of params and file-scope names
    file: str
    is_static: bool
    start_offset: int  # where the definition starts
    end_offset: int  # where the definition ends (the accessor is emitted there)
    in_header: bool = False  # a header's function: its accessor is `static inline`, next to it
    work: str = ""  # its statements that are not the lock call: after a lock, before an unlock
    work_line: int = 0  # the line they start on (the generated copy keeps it with #line)
    returns_mutex: bool = False  # `lock(m); return m;`: a cleanup guard's constructor
    # a wrapper over another wrapper (libuv's os390 `before_fork()` over `uv_mutex_lock(&l)`): that
    # one, whose accessor expr calls, and the mutex itself, `&l` (what identifies the lock, and
    # pairs the lock with an unlock through another wrapper)
    inner: "Wrapper | None" = None
    identity: str = ""

    def chain(self) -> list["Wrapper"]:
        """This wrapper and those it goes through, outermost first."""
        out, w = [], self
        while w is not None:
            out.append(w)
            w = w.inner
        return out

    @property
    def accessor(self) -> str:
        return f"rclify_mutex_of_{self.name}"

    @property
    def work_function(self) -> str:
        """A copy of the wrapper's work, called at the start (lock) or end (unlock) of every section
        extracted around the wrapper's calls: the work ran under the lock, it still does."""
        return f"rclify_work_of_{self.name}"

    @property
    def storage(self) -> str:
        """The storage class of the accessor and work function: the wrapper's, `static inline` in a
        header (each file that includes it defines them, no unused-function warning)."""
        return "static inline " if self.in_header else "static " if self.is_static else ""


@dataclass(frozen=True)
class LockOp:
    kind: str  # lock | unlock | trylock | timedlock (pthread_mutex_timedlock and _clocklock)
    mutex: str  # a pthread_mutex_t * expression valid where the statement stands
    key: str  # identity of the lock, for pairing a lock with its unlock
    via: str = ""  # macro or wrapper the call was reached through
    checked: bool = False  # result tested, failure path does not return
    wrapper: Wrapper | None = None
    wrapper_expr: str = ""  # for a wrapper call: the mutex expression with the arguments in
    result: str = ""  # C that keeps the variable the call's result went to: "err = 0;", "int err = 0;"
    work: str = ""  # a wrapper's own work, run in the section: "rclify_work_of_done((q));" (Wrapper.work)
    conditions: tuple[str, ...] = ()  # #if lines of the macros it was read through (Macro.conditions)
    # an unlock statement whose argument increments a variable (`unlock(&slots[i++].m);`): the
    # variables; the key is the lock it releases (`&slots[i].m`), `result` runs the increments
    effect_vars: tuple[str, ...] = ()


@dataclass
class Vocabulary:
    """What counts as a lock operation: pthread calls, plus the program's macros and wrappers."""

    macros: dict[str, Macro] = field(default_factory=dict)
    wrappers: dict[str, Wrapper] = field(default_factory=dict)
    # the tree's other #defines, kept until what they name is known (a macro over a wrapper:
    # `#define take(l) take_(l, __FILE__, __LINE__)`): name -> its definitions (a name may be
    # defined differently for different files), each (params, body, identifiers, #if lines, site:
    # (file, offset) when read with libclang)
    pending: dict[str, list[tuple[tuple[str, ...], str, frozenset[str], tuple[str, ...], tuple[str, int] | None]]] = \
        field(default_factory=dict)
    read: set[tuple[str, int]] = field(default_factory=set)  # #define directives read: (file, offset)
    # static wrappers defined again, under the same name, in another file (libmicrohttpd's
    # MHD_ip_count_lock in src/lib/ and src/microhttpd/): (file, name) -> that file's own
    static_twins: dict[tuple[str, str], "Wrapper"] = field(default_factory=dict)
    # a lock macro's every #define read, by site, with the identifiers its body names: memcached's
    # extstore.c and proxy.h each define STAT_L(x), over different mutexes
    definitions: dict[str, dict[tuple[str, int], tuple[Macro, frozenset[str]]]] = field(default_factory=dict)

    def for_file(self, parsed: ParsedFile) -> "Vocabulary":
        """The vocabulary as the file's translation unit sees it: of a lock macro defined
        differently in several files, the definition libclang saw for this file (the last one
        before its end, as the preprocessor does)."""
        several = {name: defs for name, defs in self.definitions.items() if len(defs) > 1}
        if not several:
            return self
        seen: dict[str, tuple[str, int]] = {}
        for definition in top_level(parsed.tu).macro_definitions:
            if definition.file is not None and definition.name in several:
                seen[definition.name] = (definition.file, definition.start)
        macros, names = dict(self.macros), self.names()
        for name, site in seen.items():
            if site not in several[name]:
                continue
            macro, idents = several[name][site]
            if idents & names:
                macros[name] = macro
            else:  # this file's definition is no lock operation
                macros.pop(name, None)
        return replace(self, macros=macros) if macros != self.macros else self

    def names(self) -> set[str]:
        return set(PTHREAD_OPS) | set(self.macros) | set(self.wrappers)

    def naming(self) -> "re.Pattern[bytes]":
        """A pattern that finds one of names() as a word in a file's bytes: a statement that
        names none performs no lock operation (classify reads each through those names)."""
        return _naming(frozenset(self.names()))

    def add_macro(self, name: str, params: tuple[str, ...], body: str, conditions: tuple[str, ...] = ()) -> bool:
        """Keeps a #define if its body uses a known lock operation, else until one it names
        becomes one (resolve()); says if it was kept as a lock macro."""
        if name in self.macros:
            return False
        self.add_definition(name, params, body, conditions, None)
        return self.resolve() and name in self.macros

    def resolve(self) -> bool:
        """Moves the pending #defines that name a lock operation to the macros, through chains of
        them; says if any was."""
        found, changed = False, True
        while changed:
            changed = False
            names = self.names()
            for name, definitions in list(self.pending.items()):
                params, body, _, conditions, site = next((d for d in definitions if d[2] & names),
                                                         (None, None, None, (), None))
                if body is not None:  # the first definition read that locks
                    self.macros[name] = Macro(name, params, body, conditions, site or ("", -1))
                    del self.pending[name]
                    for d in definitions:
                        self._record(name, d)
                    changed = found = True
        return found

    def _record(self, name: str, definition: tuple) -> None:
        """Keeps one #define of a lock macro's name by its site (see for_file)."""
        params, body, idents, conditions, site = definition
        if site is not None:
            self.definitions.setdefault(name, {})[site] = (Macro(name, params, body, conditions, site), idents)

    def add_definition(self, name: str, params: tuple[str, ...], body: str, conditions: tuple[str, ...],
                       site: tuple[str, int] | None) -> None:
        """A #define read with libclang: pending until it (or another of its name) is a lock
        macro; one of a lock macro's name read later is kept as another definition of it."""
        definition = (params, body, frozenset(t.text for t in tokenize(body) if t.kind == "ident"), conditions, site)
        if name in self.macros:
            self._record(name, definition)
        else:
            self.pending.setdefault(name, []).append(definition)


@functools.lru_cache(maxsize=64)
def _naming(names: frozenset[str]) -> "re.Pattern[bytes]":
    return re.compile(rf"\b(?:{any_of(names)})\b".encode())
