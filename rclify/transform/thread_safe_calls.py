"""External functions (no definition in the analysed files) as a section's placement sees them:
may a section that calls one run on another thread (an RCL server, a combiner)?

The C library's functions are judged by the platform's own documentation (rclify/platform/libc.py:
the man pages' table, and the classes of thread-bound behaviour): a documented function that no
class names may run on a server.  Compiler builtins and atomics touch no thread-local state, but
those of the frame they run in (alloca, frame and return addresses: frame_bound.py refuses them
in a section).  va_start .. va_end work on the frame of the function that calls them, alive
while the section runs.  Anything else (another library's function, an undocumented one)
keeps the section on its caller's thread.
"""

from rclify import pthread_api
from rclify.platform import libc

_BUILTIN_PREFIXES = ("__builtin_", "__atomic_", "__sync_", "__c11_atomic_")
# what is tied to the frame it runs in (frame_bound.py refuses these in a section)
STACK_ALLOCATION = frozenset({"alloca", "__builtin_alloca", "__builtin_alloca_with_align",
                              "__builtin_alloca_with_align_and_max"})
FRAME_ADDRESSES = frozenset({"__builtin_frame_address", "__builtin_return_address", "__builtin_stack_save",
                             "__builtin_stack_restore", "__builtin_dwarf_cfa"})
# the pthread mutex and condition API discovery finds: rewritten to the runtime's, which runs
# them on a server for the section's client
_RUNTIME = frozenset(pthread_api.DISCOVERED)


def builtin(name: str) -> bool:
    return name.startswith(_BUILTIN_PREFIXES) and name not in STACK_ALLOCATION | FRAME_ADDRESSES


def external_cause(name: str, program_calls: frozenset[str] | set[str] = frozenset(),
                   ending: bool = False) -> str | None:
    """Why a call of the external function `name` keeps a section on its caller's thread, or None.
    program_calls: what the program calls anywhere (some classes bind only then); ending: the call
    is on a path that ends the process (a result kept in a thread-local buffer dies with it)."""
    if name in _RUNTIME or builtin(name):
        return None
    cls = libc.binding_class(name, program_calls)  # (a class may name what no man page documents)
    if cls is None and libc.lookup(name) is None:
        return (f"calls {name}(), which rclify did not analyse (no definition in the analysed files, "
                f"and no manual page of the C library)")
    if cls is None or (ending and cls.dies_with_process):
        return None
    return f"calls {name}(), which {cls.why}"


def dies_with_process(name: str, program_calls: frozenset[str] | set[str] = frozenset()) -> bool:
    """Is what binds a call of `name` gone with the process (a thread-local buffer, a backtrace)?"""
    cls = libc.binding_class(name, program_calls)
    return cls is not None and cls.dies_with_process


def never_blocks(name: str) -> bool:
    """Known to reach no cancellation point: a builtin, the runtime's lock calls but the condvar
    waits, or a documented C library function that POSIX does not make one (pthreads(7))."""
    if name in pthread_api.WAITS:
        return False
    return builtin(name) or name in _RUNTIME or (libc.lookup(name) is not None and not libc.may_block(name))
