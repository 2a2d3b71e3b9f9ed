"""Sections under `pthread_cleanup_push(unlock, &m)`: when they may be extracted.

A thread cancelled while it holds m runs the handler, which unlocks m: it must be cancelled where
it waits, on its own thread, holding the lock.  A section on an RCL server would never see the
cancel (squashfs-tools cancels its workers while they wait on a condvar: the canceller's
pthread_join hung).  A section that reaches no cancellation point (cancellation_point_reached) is
extracted all the same: a deferred cancel never lands while the lock is held, in the original or
on a server, so the handler finds the lock as it would have (taken only by code outside the
section, which stays where it was).  Asynchronous cancellation (PTHREAD_CANCEL_ASYNCHRONOUS
anywhere in the file) lands anywhere: every such section stays hybrid.

`pthread_cleanup_pop(1)` runs the handler, so where the pushed handler is the region's own unlock
the pop is the region's unlock: shapes/cleanup_pop.py bounds such a region (and refuses it by the
same rule); check_cancellation_cleanups checks every other region inside a push/pop pair.
"""

import re

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.tokens import call_arguments, code_only
from rclify.transform.lock_statements.calls import classify
from rclify.transform.refusals import Reason
from rclify.transform.regions import Region
from rclify.transform.thread_safe_calls import never_blocks
from rclify.transform.vocabulary import Vocabulary

_CLEANUP = re.compile(r"\bpthread_cleanup_(push|pop)\s*\(")


def cancellation_point_reached(region: Region, vocab: Vocabulary) -> bool:
    """May the section reach a cancellation point (a condvar wait, I/O, a sleep, or anything not
    known not to)?  Any call through a pointer, of a function of the tree or of an unknown one
    counts as reaching one."""
    return any(not (never_blocks(n.spelling) or n.spelling in vocab.names()) for n in region.section_calls())


def asynchronous(parsed: ParsedFile) -> bool:
    """Does the file turn on asynchronous cancellation (a cancel lands anywhere, not at points)?"""
    return b"PTHREAD_CANCEL_ASYNCHRONOUS" in parsed.data


def check_cancellation_cleanups(parsed: ParsedFile, vocab: Vocabulary, body: ci.Cursor, regions: list[Region]) -> None:
    """A region inside `pthread_cleanup_push(unlock, &m) ... pthread_cleanup_pop(...)` on its own
    lock, closed by its own unlock, stays hybrid (cancellation-cleanup) when its section may reach a
    cancellation point or the file cancels asynchronously (see the module)."""
    start = body.extent.start.offset
    code = code_only(parsed.text(start, max((r.start for r in regions), default=start)))
    if "pthread_cleanup_push" not in code:
        return
    for region in regions:
        for call in _open_pushes(code, start, region.start):
            op = classify(call, vocab) if call else None
            if op is not None and op.kind == "unlock" and op.key == region.lock.key:
                if asynchronous(parsed) or region.problems or cancellation_point_reached(region, vocab):
                    region.refuse(Reason.CANCELLATION_CLEANUP, region.line, first=True)
                break


def _open_pushes(code: str, start: int, at: int) -> list[str]:
    """The pthread_cleanup_push calls still open at offset at of the function (code: its body's
    text from offset start), as `routine(arg);` ("" where not of that form)."""
    pushes: list[str] = []
    for m in _CLEANUP.finditer(code, 0, max(0, at - start)):
        if m.group(1) == "pop":
            if pushes:
                pushes.pop()
            continue
        pushes.append(handler_call(code, m.end() - 1))
    return pushes


def handler_call(code: str, open_paren: int) -> str:
    """`routine(arg);` of the push whose `(` is at open_paren ("" when not of that form)."""
    found = call_arguments(code, open_paren)
    args = found[0] if found else []
    routine = re.search(r"([A-Za-z_]\w*)\s*$", args[0]) if len(args) == 2 else None
    return f"{routine.group(1)}({args[1]});" if routine else ""
