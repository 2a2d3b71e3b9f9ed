"""Thread-local state: a section that uses it must run on its caller's thread, not on an RCL
server (rcl_execute_local).  Found directly (a __thread variable, errno, pthread_self...) or
through the functions a section calls."""

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile

K = ci.CursorKind

THREAD_BOUND_CALLS = {"pthread_getspecific", "pthread_setspecific", "pthread_self", "gettid",
                      "__errno_location", "sched_getcpu", "pthread_getattr_np", "pthread_sigmask"}


def uses_thread_state(node: ci.Cursor) -> bool:
    """A call to a thread-identity function, or a __thread / _Thread_local variable (errno is
    `(*__errno_location())`)."""
    if node.kind == K.CALL_EXPR:
        return node.spelling in THREAD_BOUND_CALLS
    if node.kind == K.DECL_REF_EXPR:
        target = node.referenced
        return target is not None and target.kind == K.VAR_DECL and target.tls_kind != ci.TLSKind.NONE
    return False


def thread_bound_functions(parsed: list[ParsedFile]) -> set[str]:
    """Functions of the analysed files that use thread-local state, directly or through the
    functions they call (by name: calls through pointers and into files that were not analysed
    are not followed)."""
    direct: set[str] = set()
    calls: dict[str, set[str]] = {}
    for pf in parsed:
        for fn in pf.tu.cursor.get_children():
            if fn.kind != K.FUNCTION_DECL or not fn.is_definition() or not pf.is_here(fn):
                continue
            callees = set()
            for node in fn.walk_preorder():
                if node.kind == K.CALL_EXPR:
                    callees.add(node.spelling)
                    if node.spelling in THREAD_BOUND_CALLS:
                        direct.add(fn.spelling)
                elif node.kind == K.DECL_REF_EXPR and fn.spelling not in direct and uses_thread_state(node):
                    direct.add(fn.spelling)
            calls[fn.spelling] = callees
    bound = set(direct)
    changed = True
    while changed:
        changed = False
        for name, callees in calls.items():
            if name not in bound and callees & bound:
                bound.add(name)
                changed = True
    return bound
