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

import clang.cindex as ci

from rclify import pthread_api
from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import preorder
from rclify.ctext.unit_macros import unit_macros
from rclify.ctext.tokens import any_of, tokenize
from rclify.transform.ops_tables import OpsTable

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
    hold besides: checks of its arguments, a check of the result, work of its own, a `return` of
    the mutex)."""

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
    # a lock wrapper's checks before the call (`assert(l);`): run by its accessor, before the lock
    checks: str = ""
    checks_line: int = 0
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


# a #define as read: (parameters, body, the identifiers its body names, the #if lines it sits
# under, its site (file, offset) when read with libclang)
Definition = tuple[tuple[str, ...], str, frozenset[str], tuple[str, ...], "tuple[str, int] | None"]


@dataclass
class Vocabulary:
    """What counts as a lock operation: pthread calls, plus the program's macros and wrappers.

    Built over the whole tree (a wrapper defined in one file is called in others); a macro the
    tree defines in more than one way means, in each translation unit, what that unit's own
    definition says (for_file)."""

    macros: dict[str, Macro] = field(default_factory=dict)
    wrappers: dict[str, Wrapper] = field(default_factory=dict)
    # the tree's other #defines, kept until what they name is known (a macro over a wrapper:
    # `#define take(l) take_(l, __FILE__, __LINE__)`): name -> its definitions (a name may be
    # defined differently for different files)
    pending: dict[str, list[Definition]] = field(default_factory=dict)
    read: set[tuple[str, int]] = field(default_factory=set)  # #define directives read: (file, offset)
    # static wrappers defined again, under the same name, in another file (libmicrohttpd's
    # MHD_ip_count_lock in src/lib/ and src/microhttpd/): (file, name) -> that file's own
    static_twins: dict[tuple[str, str], "Wrapper"] = field(default_factory=dict)
    # every #define read with libclang, by name and site; the names defined in more than one way
    # (parameters or body differ: memcached's extstore.c and proxy.h each define STAT_L(x), over
    # different mutexes; unbound's LOCKRET), which each unit reads with its own (for_file)
    sites: dict[str, dict[tuple[str, int], Definition]] = field(default_factory=dict)
    ambiguous: set[str] = field(default_factory=set)
    # file-scope struct variables whose initialiser stores functions (ops_tables.py), by name: a
    # call through a field of a const one is a call of the function its initialiser names
    tables: dict[str, OpsTable] = field(default_factory=dict)
    _views: dict = field(default_factory=dict, repr=False, compare=False)  # for_file's, by what it chose
    _locking_tables: tuple = field(default=((), frozenset()), repr=False, compare=False)  # names()'s memo

    def for_file(self, parsed: ParsedFile, function: ci.Cursor | None = None) -> "Vocabulary":
        """The vocabulary as the file's translation unit sees it where function starts (default:
        at the unit's end).  Of a name the tree defines in more than one way (a lock macro, or a
        helper one is written over: unbound's `LOCKRET`, checked in util/locks.h, `#define
        LOCKRET(func) func` in compat/arc4_lock.c before it includes that header), the definition
        this unit's preprocessor has in force there: the last one it read before that point (it
        reads only the #if branches the unit compiles; ctext/unit_macros.py).  Whether the name is
        a lock operation is decided again with that definition alone: another unit's definition,
        or one in a branch this unit does not compile, changes nothing here."""
        listed = unit_macros(parsed.tu)
        ambiguous = [name for name in sorted(self.ambiguous) if listed.defines(name)]
        hidden = self._tables_hidden(parsed, function)
        if not ambiguous and not hidden:
            return self
        limit = listed.point(parsed.path, function.extent.start.offset) if function is not None else None
        chosen = {name: site for name in ambiguous
                  if (site := listed.in_force(name, limit)) is not None and site in self.sites.get(name, {})}
        key = (tuple(chosen.items()), hidden, len(self.macros), len(self.wrappers), len(self.pending))
        if key not in self._views:
            view = self._with_definitions(chosen) if chosen else replace(self, _views={})
            if hidden:
                view.tables = {name: replace(t, conflicting=True) if name in hidden else t
                               for name, t in self.tables.items()}
            self._views[key] = view
        return self._views[key]

    def _tables_hidden(self, parsed: ParsedFile, function: ci.Cursor | None) -> tuple[str, ...]:
        """The const tables that a name in this unit (or function) does not denote: a static one
        defined in another C file, or one whose name the function declares again (a local or
        parameter of that name)."""
        tables = [t for t in self.tables.values() if t.resolvable and t.name in self.locking_tables()]
        if not tables:
            return ()
        hidden = {t.name for t in tables if t.static_in and t.static_in != str(parsed.path)
                  and not t.static_in.endswith(".h")}
        if function is not None:
            text = parsed.data[function.extent.start.offset : function.extent.end.offset]
            named = {t.name for t in tables if t.name not in hidden and re.search(rf"\b{t.name}\b".encode(), text)}
            if named:
                hidden |= {n.spelling for n in preorder(function)
                           if n.kind in (ci.CursorKind.VAR_DECL, ci.CursorKind.PARM_DECL) and n.spelling in named}
        return tuple(sorted(hidden))

    def _with_definitions(self, chosen: dict[str, tuple[str, int]]) -> "Vocabulary":
        """This vocabulary with each name of chosen defined only by its definition at that site:
        a lock macro if it names a lock operation (through the others, to a fixpoint), else
        pending (a helper a lock macro may pass a lock call through)."""
        macros, pending = dict(self.macros), dict(self.pending)
        for name, site in chosen.items():
            macros.pop(name, None)
            pending[name] = [self.sites[name][site]]
        changed = True
        tables = self.locking_tables()
        while changed:
            changed = False
            names = set(PTHREAD_OPS) | set(macros) | set(self.wrappers) | tables
            for name in chosen:
                if name in pending and pending[name][0][2] & names:
                    params, body, _, conditions, site = pending.pop(name)[0]
                    macros[name] = Macro(name, params, body, conditions, site)
                    changed = True
        return replace(self, macros=macros, pending=pending, _views={})

    def names(self) -> set[str]:
        """The lock operations' names: pthread's, the lock macros and wrappers, and the tables
        that hold a lock function in a field (an alias `#define OPS mr_ptmutex_ops` is a lock
        macro through them; whether a call through one is read is the table's: OpsTable)."""
        known = set(PTHREAD_OPS) | set(self.macros) | set(self.wrappers)
        return known | self.locking_tables(known)

    def locking_tables(self, known: set[str] | None = None) -> frozenset[str]:
        key = (len(self.wrappers), len(self.tables))
        if self._locking_tables[0] != key:
            functions = set(PTHREAD_OPS) | set(self.wrappers) if known is None else known
            self._locking_tables = (key, frozenset(t.name for t in self.tables.values() if t.holds_any(functions)))
        return self._locking_tables[1]

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
                    changed = found = True
        return found

    def add_definition(self, name: str, params: tuple[str, ...], body: str, conditions: tuple[str, ...],
                       site: tuple[str, int] | None) -> None:
        """A #define read (with libclang when site is given): pending until it (or another of its
        name) is a lock macro; every one read with libclang is kept by its site (for_file)."""
        definition = (params, body, frozenset(t.text for t in tokenize(body) if t.kind == "ident"), conditions, site)
        if site is not None:
            known = self.sites.setdefault(name, {})
            if any((d[0], d[1]) != (params, body) for d in known.values()):
                self.ambiguous.add(name)
            known[site] = definition
        if name not in self.macros:
            self.pending.setdefault(name, []).append(definition)


@functools.lru_cache(maxsize=64)
def _naming(names: frozenset[str]) -> "re.Pattern[bytes]":
    return re.compile(rf"\b(?:{any_of(names)})\b".encode())
