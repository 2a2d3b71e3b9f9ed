"""What a C library function does with state bound to the calling thread: may a section that
calls it run on another thread (an RCL server, a combiner)?

The facts are data: libc_functions.tsv (derived from the man pages by derive_libc_functions.py:
which functions are the platform's, whether they return, whether they may block) and
thread_bound.toml (the classes of thread-bound behaviour no manual states as such).  A function
the manual documents and no class names may run on a server:
  - errno is handed to the server and back by the runtime under every algorithm;
  - a function that may block (a cancellation point) blocks a servicing thread, and the server's
    management thread keeps its other locks served (docs/runtime.md);
  - a function that cannot return and names no class ends the process from whichever thread.
"""

import functools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

_HERE = Path(__file__).parent
_GLIBC_PREFIXES = ("__isoc99_", "__isoc23_", "__xpg_", "__gnu_")  # what glibc's headers redirect to


@dataclass(frozen=True)
class LibcFunction:
    name: str
    page: str
    library: str
    headers: tuple[str, ...]
    thread_safety: str  # attributes(7): "MT-Safe locale", ...
    noreturn: bool
    cancellation: str  # must / may (pthreads(7)): it may block

    @property
    def attributes(self) -> set[str]:
        """The thread-safety keywords: locale, env, race:strtok -> race, ..."""
        return {w.split(":")[0] for w in self.thread_safety.split()[1:]}


@dataclass(frozen=True, eq=False)
class BindingClass:
    name: str
    why: str
    functions: frozenset[str]
    attribute: str = ""  # every function whose thread safety names this keyword
    headers: frozenset[str] = frozenset()  # every function declared by one of these headers
    when_program_calls: frozenset[str] = frozenset()  # binds only in a program that calls one
    bound_arguments: dict = field(default_factory=dict)  # function -> the constants its first argument binds with
    # classes whose effect dies with the process: tolerated on a path that ends it
    dies_with_process: bool = False

    def names(self, fn: LibcFunction | None, name: str) -> bool:
        return (name in self.functions
                or (fn is not None and bool(self.attribute) and self.attribute in fn.attributes)
                or (fn is not None and bool(self.headers & set(fn.headers))))


@functools.cache
def functions() -> dict[str, LibcFunction]:
    out = {}
    for line in (_HERE / "libc_functions.tsv").read_text().splitlines()[2:]:
        name, page, library, headers, safety, noreturn, cancellation = line.split("\t")
        out[name] = LibcFunction(name, page, library, tuple(h for h in headers.split(",") if h), safety,
                                 noreturn == "1", cancellation)
    return out


@functools.cache
def _toml() -> dict:
    return tomllib.loads((_HERE / "thread_bound.toml").read_text())


@functools.cache
def classes() -> tuple[BindingClass, ...]:
    return tuple(BindingClass(name, spec["why"], frozenset(spec.get("functions", ())), spec.get("attribute", ""),
                              frozenset(spec.get("headers", ())), frozenset(spec.get("when_program_calls", ())),
                              dict(spec.get("bound_arguments", {})), spec.get("dies_with_process", False))
                 for name, spec in _toml().items() if name != "aliases")


@functools.cache
def constants() -> dict[str, int]:
    """libc_constants.tsv: the headers' values of the constants thread_bound.toml names."""
    rows = (_HERE / "libc_constants.tsv").read_text().splitlines()[2:]
    return {name: int(value) for name, value in (row.split("\t") for row in rows)}


def base_name(name: str) -> str:
    """The documented function a header's name stands for: __memcpy_chk / __builtin___memcpy_chk ->
    memcpy (_FORTIFY_SOURCE), __isoc99_sscanf -> sscanf, __assert_fail -> abort (thread_bound.toml)."""
    aliases = _toml()["aliases"]
    if name in aliases:
        return aliases[name]
    if name.endswith("_chk"):
        stem = name[: -len("_chk")]
        for prefix in ("__builtin___", "__"):
            if stem.startswith(prefix):
                return stem[len(prefix):]
    for prefix in _GLIBC_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def lookup(name: str) -> LibcFunction | None:
    """The man pages' entry for the function `name` calls, or None when it is not documented."""
    return functions().get(base_name(name)) or functions().get(name)


UNSEEN = object()  # binding_class's first_argument when the call is not at hand


def binding_class(name: str, program_calls: frozenset[str] | set[str] = frozenset(),
                  first_argument: "int | None | object" = UNSEEN) -> BindingClass | None:
    """The class that makes a call of `name` thread-bound, or None.  program_calls: the names
    the program calls anywhere (a class with when_program_calls binds only then);
    first_argument: the value of the call's first argument (None: not a constant)."""
    base = base_name(name)
    fn = lookup(name)
    for cls in classes():
        if not (cls.names(fn, base) or cls.names(fn, name)):
            continue
        if cls.when_program_calls and not (cls.when_program_calls & set(program_calls)):
            continue
        binding = cls.bound_arguments.get(base)
        if binding and first_argument is not UNSEEN and first_argument is not None \
                and first_argument not in {constants()[c] for c in binding}:
            continue
        return cls
    return None


def process_ending(name: str) -> bool:
    """Does a call of `name` end the process (cannot return, and nothing thread-bound on the way)?"""
    fn = lookup(name)
    return fn is not None and fn.noreturn and binding_class(name) is None


def may_block(name: str) -> bool:
    fn = lookup(name)
    return fn is not None and bool(fn.cancellation)

