"""What lock helpers are made of: a function read from the text, a helper and the locks it creates,
a macro alias of one, a call of one and the lock each call creates (see the package's docstring)."""

import re
from dataclasses import dataclass, field

from rclify.ctext.languages import is_cxx, is_header
from rclify.lock_identity.lock_helpers.lock_expressions import pointer_to


@dataclass(frozen=True)
class Function:
    """A function definition read from a file's text."""

    file: str
    name: str
    line: int
    params: tuple[str, ...]
    returns_void: bool
    body_start: int  # offset of its `{`
    body_end: int  # offset just past its `}`
    static: bool = False


@dataclass
class HelperLock:
    """One lock a helper creates: the parameter it hangs from (-1: the pointer the helper
    returns), the path from what that points to ('' when it is the mutex pointer itself), and the
    pthread_mutex_init calls that initialise it ((file, line), through nested helpers too)."""

    param: int
    path: str
    inits: list[tuple[str, int]] = field(default_factory=list)
    init_ids: list[str] = field(default_factory=list)  # their lock ids (set by link())

    def describe(self, helper: "Helper") -> str:
        base = "its result" if self.param < 0 else f"parameter {helper.params[self.param]}"
        if self.path == "&":
            return f"the object {base} names"
        return f"{base}{self.path}" if self.path else base


@dataclass(frozen=True)
class MacroAlias:
    """A function-like macro of the tree whose whole body is one call of a helper (pigz's yarn.h:
    `#define new_lock(a) new_lock_(a, __FILE__, __LINE__)`), possibly through other such macros:
    each use of it is a call of the helper."""

    name: str
    file: str
    line: int
    params: tuple[str, ...]
    helper: str  # the helper function it calls
    args: tuple[str, ...]  # the helper's arguments: one of params, or a constant (__FILE__, 0, ...)

    def helper_args(self, written: list[str] | tuple[str, ...]) -> tuple[str, ...] | None:
        """The helper's arguments for a use of the macro with the arguments written; None when
        they do not fit its parameters."""
        written = [a for a in written if a.strip()] if not self.params else list(written)
        if len(written) != len(self.params):
            return None
        mapping = dict(zip(self.params, (a.strip() for a in written)))
        return tuple(mapping.get(a, a) for a in self.args)


@dataclass
class Helper:
    name: str
    file: str
    line: int
    params: tuple[str, ...]
    returns_void: bool
    locks: list[HelperLock]
    aliases: dict[str, MacroAlias] = field(default_factory=dict)  # macros of the tree calling it
    macro: bool = False  # an init macro (init_macros()), not a function

    @property
    def kind(self) -> str:
        return "the macro " if self.macro else ""


@dataclass
class HelperCall:
    """One call of a helper in the tree's text."""

    file: str
    line: int
    column: int
    function: str  # the enclosing function ('' at file scope)
    helper: Helper
    args: tuple[str, ...]
    target: str  # what the result is assigned to ('' when it is not)
    internal: bool  # inside a helper, creating that helper's own lock: not a lock of its own
    via: str = ""  # the macro called (a MacroAlias of the helper), '' for a call of the helper itself
    written: tuple[str, ...] = ()  # that macro's arguments as written (args: the helper's)

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        """How the call is found again in a rewritten text: what is called (the helper, or the
        macro) and its arguments as written."""
        return self.via or self.helper.name, tuple(re.sub(r"\s+", "", a) for a in (self.written if self.via else self.args))

    @property
    def called(self) -> str:
        """The call, for reports: `uv_mutex_init() call`, `new_lock() call (a macro for new_lock_())`."""
        return f"{self.via}() call (a macro for {self.helper.name}())" if self.via else f"{self.helper.name}() call"

    def lock_expression(self, lock: HelperLock) -> str:
        """A pointer to the mutex this call creates for lock, in the caller's terms."""
        if lock.param >= 0:
            return pointer_to(self.args[lock.param], lock.path) if lock.param < len(self.args) else ""
        if self.target:
            return pointer_to(self.target, lock.path)
        return f"{self.via or self.helper.name}(){lock.path}"


@dataclass(frozen=True, eq=False)
class CallLock:
    """One lock one call creates: what a lock_config.h entry of kind 'helper_call' stands for."""

    call: HelperCall
    lock: HelperLock
    expr: str  # lock_expression(lock)

    # where it is, as for a discovered pthread_mutex_init site (lock_table.py numbers them together)
    file = property(lambda self: self.call.file)
    line = property(lambda self: self.call.line)
    column = property(lambda self: self.call.column)
    function = property(lambda self: self.call.function)


@dataclass
class Helpers:
    helpers: dict[str, Helper] = field(default_factory=dict)  # by name (of several, the first defined)
    calls: list[HelperCall] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    by_file: dict[tuple[str, str], Helper] = field(default_factory=dict)  # (file, name) -> every helper

    def init_lines(self) -> set[tuple[str, int]]:
        """(file, line) of the pthread_mutex_init calls inside helpers."""
        return {at for h in self.by_file.values() for lock in h.locks for at in lock.inits}

    def call_locks(self) -> list[CallLock]:
        """Every lock the tree's calls of helpers create: calls in C files (not inside helpers).
        Calls in headers and C++ files keep the helper's entry: RCL_LOCK_SITE is C only, and a
        header may be compiled as C++."""
        return [CallLock(c, lock, expr) for c in self.calls if not c.internal and not is_cxx(c.file)
                and not is_header(c.file) for lock in c.helper.locks if (expr := c.lock_expression(lock))]
