"""Thread-local state: which sections must run on their caller's thread (rcl_execute_local), and
why.  The analysis never guesses: a section runs on an RCL server only when everything it does is
known to use no thread-local state.

A section is thread-bound when it
  - uses a __thread / _Thread_local variable, errno, or a thread-identity call (pthread_self,
    pthread_getspecific...);
  - calls through a function pointer (what runs is not known);
  - calls a function that has no definition in the analysed files and is not in the allowlist
    of libc/POSIX functions known to be safe (thread_safe_calls.py);
  - calls a function of the analysed files that is thread-bound for one of these reasons,
    directly or through the functions it calls (a call graph by name: a static function defined
    in two files is thread-bound when either definition is).
Statements of an early exit's tail run in the caller after the section and are not looked at.
Only the functions sections reach are walked.  lock_config.h can overrule the analysis per
section (rclify/lock_config.py: SectionOverride, applied by placement.runs_on_caller_thread).
"""

import functools
import re
from pathlib import Path

import clang.cindex as ci

from rclify import pthread_api
from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import preorder, top_level
from rclify.ctext.tokens import any_of
from rclify.transform.thread_safe_calls import allowed

K = ci.CursorKind

THREAD_BOUND_CALLS = {"pthread_getspecific", "pthread_setspecific", "pthread_self", "gettid",
                      "__errno_location", "sched_getcpu", "pthread_getattr_np", "pthread_sigmask",
                      "pthread_exit", "uselocale"}
_MAX_CHAIN = 6  # functions named in a reason before it stops following
# Condition-variable waits: a section that may reach one must not run on a combiner (it would
# block another thread's combining pass), so it is called with rcl_execute_may_wait.
WAIT_CALLS = pthread_api.WAITS


def node_cause(node: ci.Cursor) -> tuple[str | None, str | None]:
    """(why this node is thread-bound, or None; the function it calls by name, or None)."""
    if node.kind == K.CALL_EXPR:
        target = node.referenced
        if target is None or target.kind != K.FUNCTION_DECL:
            what = f" `{node.spelling}`" if node.spelling else ""
            return f"calls through a function pointer{what}", None
        name = target.spelling
        if name == "__errno_location":
            return "uses errno", None
        if name in THREAD_BOUND_CALLS:
            return f"calls {name}()", None
        return None, name
    if node.kind == K.DECL_REF_EXPR:
        target = node.referenced
        if target is not None and target.kind == K.VAR_DECL and target.tls_kind != ci.TLSKind.NONE:
            return f"uses the thread-local variable {target.spelling}", None
    return None, None


class ThreadState:
    """The call graph of the functions sections reach, built on demand over the parsed files."""

    def __init__(self, root: Path | None = None):
        self.root = root
        self.definitions: dict[str, list[ci.Cursor]] = {}  # name -> its definitions (every TU)
        self.declared_in_tree: set[str] = set()  # called, and declared in a file under root
        self.per_thread_locale = False  # some file calls uselocale()
        self._facts: dict[str, tuple[str | None, set[str]]] = {}  # name -> (direct cause, callees)
        self._why: dict[str, str | None] = {}  # final: name -> why it is thread-bound
        self._seen: set[tuple[str, int]] = set()
        self._in_tree: dict[str, bool] = {}

    def add(self, parsed: list[ParsedFile]) -> None:
        """Indexes the function definitions of these translation units (not walked yet)."""
        for pf in parsed:
            self.per_thread_locale |= b"uselocale" in pf.data
            for name, fn in top_level(pf.tu).function_definitions:
                if name is None:
                    continue
                key = (name, fn.extent.start.offset)
                if key not in self._seen:
                    self._seen.add(key)
                    self.definitions.setdefault(fn.spelling, []).append(fn)
                    self._facts.pop(fn.spelling, None)  # a new definition: walk again

    def reachable(self, roots: set[str]) -> set[str]:
        """Every function reachable from roots by calls (walking the definitions it needs)."""
        reached, todo = set(), list(roots)
        while todo:
            name = todo.pop()
            if name in reached:
                continue
            reached.add(name)
            if name in self.definitions:
                todo.extend(self._facts_of(name)[1] - reached)
        return reached

    def wanted(self, roots: set[str]) -> set[str]:
        """Functions reached from roots, declared in the tree (the roots, called by sections
        themselves, always count), with no definition parsed yet."""
        return {n for n in self.reachable(roots)
                if n not in self.definitions and (n in self.declared_in_tree or n in roots) and not allowed(n)}

    def callee_cause(self, name: str) -> str | None:
        """Why calling `name` makes a section thread-bound, or None."""
        if name not in self.definitions:
            if allowed(name, self.per_thread_locale):
                return None
            return f"calls {name}(), which rclify did not analyse (no definition in the analysed files)"
        if name not in self._why:
            self._settle(name)
        if self._why[name] is None:
            return None
        chain = [name]
        while len(chain) <= _MAX_CHAIN and self._cause(chain[-1]) is None:
            chain.append(self._next_hop(chain[-1]))
        cause = self._cause(chain[-1]) or "..."
        return f"calls {' → '.join(f + '()' for f in chain)}, which {cause}"

    def waits_on_condvar(self, nodes) -> bool:
        """Do the nodes of a section call a condvar wait, directly or through the functions of
        the analysed files they call?"""
        called = {callee for node in nodes for _, callee in [node_cause(node)] if callee is not None}
        return bool(self.reachable(called) & WAIT_CALLS)

    def section_cause(self, nodes) -> str | None:
        """The first reason (in source order) the nodes of a section are thread-bound, or None."""
        for node in nodes:
            cause, callee = node_cause(node)
            if cause is None and callee is not None:
                cause = self.callee_cause(callee)
            if cause is not None:
                return cause
        return None

    # -- the graph -------------------------------------------------------------------------
    def _facts_of(self, name: str) -> tuple[str | None, set[str]]:
        """(what in name's own body is thread-bound, or None; the functions it calls by name)."""
        if name not in self._facts:
            cause, callees = None, set()
            for fn in self.definitions[name]:
                for node in preorder(fn):
                    node_why, callee = node_cause(node)
                    if callee is not None:
                        callees.add(callee)
                        if callee not in self.declared_in_tree and self._declared_under_root(node.referenced):
                            self.declared_in_tree.add(callee)
                    cause = cause or node_why
            self._facts[name] = (cause, callees)
        return self._facts[name]

    def _cause(self, name: str) -> str | None:
        """Why name itself is thread-bound: its body, or a call into what was neither analysed
        nor allowed (depends on what is parsed: asked once every file is)."""
        cause, callees = self._facts_of(name)
        if cause is None:
            unknown = sorted(c for c in callees
                             if c not in self.definitions and not allowed(c, self.per_thread_locale))
            if unknown:
                cause = self.callee_cause(unknown[0])
        return cause

    def _settle(self, name: str) -> None:
        """Decides every function reachable from name (breadth first from the direct causes, so
        each names its shortest chain)."""
        reached = {n for n in self.reachable({name}) if n in self.definitions and n not in self._why}
        bound = {n for n in reached if self._cause(n) is not None}
        bound |= {n for n in self._why if self._why[n] is not None}
        frontier = set(bound)
        while frontier:
            new = {n for n in reached - bound if self._facts[n][1] & frontier}
            bound |= new
            frontier = new
        for n in reached:
            self._why[n] = "bound" if n in bound else None

    def _next_hop(self, name: str) -> str:
        callees = self._facts[name][1]
        return min((c for c in callees if c in self.definitions and self._why.get(c)),
                   key=lambda c: (self._depth(c), c))

    def _depth(self, name: str, limit: int = _MAX_CHAIN) -> int:
        """Calls from name to a direct cause (limit when further)."""
        depth, frontier, seen = 0, {name}, set()
        while depth < limit:
            if any(self._cause(n) is not None for n in frontier):
                return depth
            seen |= frontier
            frontier = {c for n in frontier for c in self._facts[n][1]
                        if c in self.definitions and self._why.get(c) and c not in seen}
            if not frontier:
                break
            depth += 1
        return limit

    def _declared_under_root(self, decl: ci.Cursor | None) -> bool:
        file = decl.location.file if decl is not None and self.root is not None else None
        if file is None:
            return False
        if file.name not in self._in_tree:
            self._in_tree[file.name] = Path(file.name).resolve().is_relative_to(self.root)
        return self._in_tree[file.name]


def defines_any(data: bytes, names: set[str]) -> bool:
    """Does this C text look like it defines one of these functions (`name(...) {`)?"""
    return bool(names) and _definition_of_any(frozenset(names)).search(data) is not None


@functools.lru_cache(maxsize=16)
def _definition_of_any(names: frozenset[str]) -> "re.Pattern[bytes]":
    """One pattern for all the names (the call graph asks it of every C file of the tree)."""
    return re.compile(rf"\b(?:{any_of(names)})\s*\([^;{{)]*\)\s*\{{".encode())
