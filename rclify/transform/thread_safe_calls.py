"""External functions a critical section may call and still run on an RCL server.

A section runs on its caller's thread (rcl_execute_local) unless every function it calls, directly
or through the functions it calls, is either defined in the analysed files (and found free of
thread-local state there) or listed here.  Everything else -- a call through a function pointer,
a function of a library rclify cannot see -- keeps the section on its caller's thread.

Listed: libc/POSIX functions known to use no thread-local state other than errno.  errno is
handed back to the caller by the runtime under every algorithm, so a function that only *sets*
errno may run on a server; a section that *reads* errno itself still runs on its caller's thread
(thread_state.py).  Functions that block (I/O, sleeping) are left out on purpose: a server that
blocks stalls every lock it serves.

LOCALE functions read the calling thread's locale (uselocale(3)); they are safe only while every
thread uses the global locale, so they count as thread-bound in a program that calls uselocale.
"""

from rclify import pthread_api

# Pure: no errno, no locale.
PURE = frozenset({
    # <string.h>, <strings.h>
    "memcpy", "memmove", "memset", "memcmp", "memchr", "memrchr", "mempcpy", "bzero", "explicit_bzero",
    "strlen", "strnlen", "strcmp", "strncmp", "strcpy", "strncpy", "stpcpy", "stpncpy", "strcat",
    "strncat", "strchr", "strrchr", "strchrnul", "strstr", "strspn", "strcspn", "strpbrk", "strlcpy",
    "strlcat", "memmem",
    # <stdlib.h>
    "abs", "labs", "llabs", "div", "ldiv", "lldiv", "qsort", "bsearch",
    # <arpa/inet.h>
    "htonl", "htons", "ntohl", "ntohs",
    # <assert.h>, <stdlib.h>: end the process from whichever thread
    "__assert_fail", "abort",
}) | frozenset(pthread_api.DISCOVERED)  # the pthread mutex and condition API discovery finds:
# rewritten to the runtime's, which runs them on a server

# May set errno (handed back by the runtime), nothing else thread-local.
SETS_ERRNO = frozenset({
    "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign", "aligned_alloc",
    "strdup", "strndup",
    "time", "clock_gettime", "clock_getres", "gettimeofday",
    "getpagesize", "sysconf",
    # semaphores have no owner: posting one (or trying it) from a server is what the caller would do
    "sem_post", "sem_trywait", "sem_getvalue",
    "fabs", "floor", "ceil", "round", "sqrt", "pow", "log", "log2", "exp",
})

# Read the calling thread's locale (uselocale); may set errno.
LOCALE = frozenset({
    "snprintf", "sprintf",
    "strtol", "strtoul", "strtoll", "strtoull", "strtoimax", "strtoumax", "strtod", "strtof",
    "atoi", "atol", "atoll",
    "isalnum", "isalpha", "isdigit", "isspace", "isupper", "islower", "isxdigit", "isprint",
    "ispunct", "iscntrl", "isgraph", "tolower", "toupper",
    "__ctype_b_loc", "__ctype_tolower_loc", "__ctype_toupper_loc",  # what glibc's <ctype.h> calls
})

# Compiler builtins (__builtin_expect, __builtin_memcpy, _FORTIFY_SOURCE's __builtin___memcpy_chk)
# and atomics touch no thread-local state; but those of the frame they run in (alloca, the frame and
# return addresses, which frame_bound.check refuses in a section anyway) and va_arg's.
_BUILTIN_PREFIXES = ("__builtin_", "__atomic_", "__sync_", "__c11_atomic_")
# what is tied to the frame it runs in (frame_bound.py refuses these in a section)
STACK_ALLOCATION = frozenset({"alloca", "__builtin_alloca", "__builtin_alloca_with_align",
                              "__builtin_alloca_with_align_and_max"})
FRAME_ADDRESSES = frozenset({"__builtin_frame_address", "__builtin_return_address", "__builtin_stack_save",
                             "__builtin_stack_restore", "__builtin_dwarf_cfa"})


def _base_name(name: str) -> str:
    """__builtin___memcpy_chk / __memcpy_chk -> memcpy (the _FORTIFY_SOURCE variants)."""
    if name.endswith("_chk"):
        name = name[: -len("_chk")]
        for prefix in ("__builtin___", "__"):
            if name.startswith(prefix):
                return name[len(prefix):]
    return name


def allowed(name: str, per_thread_locale: bool = False) -> bool:
    """May a section call the external function `name` and still run on a server?"""
    base = _base_name(name)
    if base in PURE or base in SETS_ERRNO:
        return True
    if base in LOCALE:
        return not per_thread_locale
    return name.startswith(_BUILTIN_PREFIXES) and not name.startswith("__builtin_va_") \
        and name not in STACK_ALLOCATION | FRAME_ADDRESSES
