"""Thread-local state: which sections must run on their caller's thread (rcl_execute_local), and
why.  The analysis never guesses: a section runs on another thread (an RCL server, a combiner) only
when everything it does is known to give the same result there.

A section is thread-bound when it
  - uses a __thread / _Thread_local variable, or takes errno's address (errno itself is handed
    to the server and back by the runtime);
  - calls a C library function that acts on the calling thread (thread_safe_calls.py, from the
    platform's documentation: rclify/platform/), or a function that is neither defined in the
    analysed files nor documented there;
  - calls through a function pointer whose possible targets are not known, or one of whose
    targets is thread-bound (function_pointers.py: a points-to set per pointer location);
  - calls a function of the analysed files that is thread-bound for one of these reasons,
    directly or through the functions it calls (a call graph by name: a static function defined
    in two files is thread-bound when either definition is).
A function that cannot return (every path ends the process) may use what a thread-local buffer
holds (strerror's): the buffer dies with the process.  Statements of an early exit's tail run in
the caller after the section and are not looked at.  Only the functions sections reach are
walked.  lock_config.h can overrule the analysis per section (rclify/lock_config.py:
SectionOverride, applied by placement.runs_on_caller_thread).
"""

import functools
import re
from pathlib import Path

import clang.cindex as ci

from rclify import pthread_api
from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import child_nodes, constant_value, offsets, operator, preorder, top_level
from rclify.ctext.tokens import any_of
from rclify.platform import libc
from rclify.transform.function_pointers import FunctionPointers
from rclify.transform.thread_safe_calls import dies_with_process, external_cause

K = ci.CursorKind
_MAX_CHAIN = 6  # functions named in a reason before it stops following
_HARD, _WEAK = "hard", "weak"  # bound whatever follows / only by what dies with the process
# Condition-variable waits: a section that may reach one must not run on a combiner (it would
# block another thread's combining pass), so it is called with rcl_execute_may_wait.
WAIT_CALLS = pthread_api.WAITS


class ThreadState:
    """The call graph of the functions sections reach, built on demand over the parsed files."""

    def __init__(self, root: Path | None = None):
        self.root = root
        self.definitions: dict[str, list[ci.Cursor]] = {}  # name -> its definitions (every TU)
        self.declared_in_tree: set[str] = set()  # called, and declared in a file under root
        self.program_calls: set[str] = set()  # the words some thread-bound classes need called
        self.pointers = FunctionPointers(self._under_root, self._text_of)
        self._texts: dict[str, bytes] = {}
        self._facts: dict[str, tuple[str | None, set[str], bool, set[str]]] = {}  # name -> _facts_of's
        self._why: dict[str, str | None] = {}  # final: name -> why it is thread-bound
        self._seen: set[tuple[str, int]] = set()
        self._in_tree: dict[str, bool] = {}

    def add(self, parsed: list[ParsedFile]) -> None:
        """Indexes the function definitions of these translation units (not walked yet)."""
        watched = {w for cls in libc.classes() for w in cls.when_program_calls}
        for pf in parsed:
            self.program_calls |= {w for w in watched if w.encode() in pf.data}
            for name, fn in top_level(pf.tu).function_definitions:
                if name is None:
                    continue
                key = (name, fn.extent.start.offset)
                if key not in self._seen:
                    self._seen.add(key)
                    self.definitions.setdefault(fn.spelling, []).append(fn)
        self.pointers.add(parsed)
        self._facts.clear()  # new definitions and new stores into pointers: walk again
        self._why.clear()

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
        themselves, always count), with no definition parsed yet: the tree's C files that define
        one are parsed (analyse.complete_call_graph)."""
        # whatever the C library calls so: a function the tree defines itself is judged by its body
        return {n for n in self.reachable(roots) if n not in self.definitions and (n in self.declared_in_tree or n in roots)}

    def pointer_words(self, roots: set[str]) -> set[str]:
        """What a file must mention to store into a pointer that the functions reached from roots
        call through (its files are parsed too: a store missed would leave the set short)."""
        words = set()
        for name in self.reachable(roots):
            for fn in self.definitions.get(name, ()):
                for node in preorder(fn):
                    if node.kind == K.CALL_EXPR and not _direct(node):
                        words |= self.pointers.mentioned_words(node)
        return words

    def callee_cause(self, name: str, ending: bool = False) -> str | None:
        """Why calling `name` makes a section thread-bound, or None (ending: the call is on a path
        that ends the process)."""
        if name not in self.definitions:
            return external_cause(name, self.program_calls, ending)
        if name not in self._why:
            self._settle(name)
        if self._why[name] is None or (ending and self._why[name] == _WEAK):
            return None
        chain = [name]
        while len(chain) <= _MAX_CHAIN and self._cause(chain[-1]) is None:
            chain.append(self._next_hop(chain[-1]))
        cause = self._cause(chain[-1]) or "..."
        return f"calls {' → '.join(f + '()' for f in chain)}, which {cause}"

    def waits_on_condvar(self, nodes) -> bool:
        """Do the nodes of a section call a condvar wait, directly or through the functions of
        the analysed files they call?"""
        called = {callee for node in nodes for callee in self.node_cause(node)[1]}
        return bool(self.reachable(called) & WAIT_CALLS)

    def section_cause(self, nodes) -> str | None:
        """The first reason (in source order) the nodes of a section are thread-bound, or None."""
        nodes = live_nodes(nodes)
        spans = self._ending_spans(nodes)
        for node in nodes:
            cause, callees = self.node_cause(node)
            ending = _within(node, spans)
            for callee in callees:
                if cause is None and (why := self.callee_cause(callee, ending)) is not None:
                    cause = why if _direct(node) else \
                        f"calls through the function pointer `{self.pointers.targets(node).location}`, " \
                        f"which may call {callee}(): {why}"
            if cause is not None:
                return cause
        return None

    def _ending_spans(self, nodes) -> list[tuple[int, int]]:
        """Where the calls that end the process are (what their arguments compute dies with it)."""
        return [offsets(n) for n in nodes if n.kind == K.CALL_EXPR and _direct(n) and self._ends(n.referenced.spelling)]

    def _ends(self, name: str) -> bool:
        return self._facts_of(name)[2] if name in self.definitions else libc.process_ending(name)

    def node_cause(self, node: ci.Cursor) -> tuple[str | None, tuple[str, ...]]:
        """(why this node is thread-bound, or None; the functions it calls by name)."""
        if node.kind == K.CALL_EXPR:
            target = node.referenced
            if target is None or target.kind != K.FUNCTION_DECL:
                found = self.pointers.targets(node)
                if found.unknown:
                    return f"calls through the function pointer `{found.location}`, whose targets are not known: " \
                           f"{found.unknown}", ()
                return None, tuple(sorted(found.functions))
            name = target.spelling
            if name not in self.definitions and libc.binding_class(name, self.program_calls) is not None \
                    and libc.binding_class(name, self.program_calls, _first_argument_value(node)) is None:
                return None, ()  # bound only by an argument this call does not give (a thread's clock)
            return None, (name,)
        if node.kind == K.DECL_REF_EXPR:
            target = node.referenced
            if target is not None and target.kind == K.VAR_DECL and target.tls_kind != ci.TLSKind.NONE:
                return f"uses the thread-local variable {target.spelling}", ()
        if node.kind == K.UNARY_OPERATOR and _takes_errno_address(node):
            return "takes errno's address (errno is the calling thread's)", ()
        return None, ()

    # -- the graph -------------------------------------------------------------------------
    def _facts_of(self, name: str) -> tuple[str | None, set[str], bool, set[str]]:
        """(what in name's own body is thread-bound, or None; the functions it calls by name;
        whether it cannot return; the functions it calls only in the arguments of calls that end
        the process)."""
        if name not in self._facts:
            cause, callees, not_ending = None, set(), set()
            self._facts[name] = (None, set(), False, set())  # (a recursive call meanwhile: not ending)
            for fn in self.definitions[name]:
                nodes = live_nodes(preorder(fn))
                spans = self._ending_spans(nodes)
                for node in nodes:
                    node_why, called = self.node_cause(node)
                    if called and not _within(node, spans):
                        not_ending.update(called)
                    for callee in called:
                        callees.add(callee)
                        direct = node.referenced is not None and node.referenced.kind == K.FUNCTION_DECL
                        if callee not in self.declared_in_tree and (not direct or self._declared_under_root(node.referenced)):
                            self.declared_in_tree.add(callee)  # (a pointer's targets: the tree's own)
                    cause = cause or node_why
            ends = all(self._ends_process(fn) for fn in self.definitions[name])
            self._facts[name] = (cause, callees, ends, callees - not_ending)
        return self._facts[name]

    def _ends_process(self, fn: ci.Cursor) -> bool:
        """Can a call of this definition not return: no return statement, and its body's last
        statement a call that ends the process (exit, abort, or such a function of the tree)?"""
        body = [c for c in child_nodes(fn) if c.kind == K.COMPOUND_STMT]
        if not body or any(n.kind == K.RETURN_STMT for n in preorder(body[0])):
            return False
        statements = child_nodes(body[0])
        last = _called(statements[-1]) if statements else None
        if last is None:
            return False
        if last in self.definitions:
            return self._facts_of(last)[2]
        return libc.process_ending(last)

    def _cause(self, name: str) -> str | None:
        """Why name itself is thread-bound: its body, or a call into what was neither analysed
        nor allowed (depends on what is parsed: asked once every file is)."""
        return self._direct(name)[0]

    def _direct(self, name: str) -> tuple[str | None, str | None]:
        """(why name itself is thread-bound, or None; _HARD, or _WEAK when only by what dies with
        the process: a path that ends it may use it)."""
        cause, callees, ends, in_ending_calls = self._facts_of(name)
        if cause is not None:
            return cause, _HARD
        weak = None
        for c in sorted(c for c in callees if c not in self.definitions):
            if external_cause(c, self.program_calls, ending=ends or c in in_ending_calls) is None:
                continue
            why = external_cause(c, self.program_calls)
            if not dies_with_process(c, self.program_calls):
                return why, _HARD
            weak = weak or why
        return weak, _WEAK if weak else None

    def _settle(self, name: str) -> None:
        """Decides every function reachable from name (breadth first from the direct causes, so
        each names its shortest chain): _HARD when a call path binds it whatever follows, _WEAK
        when only what dies with the process does (not passed up through a call on a path that
        ends the process)."""
        reached = {n for n in self.reachable({name}) if n in self.definitions and n not in self._why}
        strength = {n: self._direct(n)[1] for n in reached}
        hard = {n for n in reached if strength[n] == _HARD} | {n for n, w in self._why.items() if w == _HARD}
        weak = {n for n in reached if strength[n] == _WEAK} | {n for n, w in self._why.items() if w == _WEAK}
        frontier = set(hard)
        while frontier:
            new = {n for n in reached - hard if self._facts[n][1] & frontier}
            hard |= new
            frontier = new
        frontier = weak - hard
        while frontier:
            new = {n for n in reached - hard - weak
                   if not self._facts[n][2] and (self._facts[n][1] - self._facts[n][3]) & frontier}
            weak |= new
            frontier = new
        for n in reached:
            self._why[n] = _HARD if n in hard else _WEAK if n in weak else None

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
        return file is not None and self._under_root(file.name)

    def _text_of(self, name: str) -> bytes:
        if name not in self._texts:
            self._texts[name] = Path(name).read_bytes()
        return self._texts[name]

    def _under_root(self, name: str | None) -> bool:
        if name is None or self.root is None:
            return False
        if name not in self._in_tree:
            self._in_tree[name] = Path(name).resolve().is_relative_to(self.root)
        return self._in_tree[name]


# The lock and condition-variable calls that cannot fail inside a section the runtime runs for
# another thread: there the runtime ends the process instead of returning an error (mutex.c,
# rcl_failed_elsewhere), so a branch taken on their failure is not taken there.
_CANNOT_FAIL_ELSEWHERE = frozenset(f.name for f in pthread_api.API if f.name.startswith(("pthread_mutex_", "pthread_cond_"))
                                   and (f.kind in ("lock", "unlock", "signal") or (f.waits and f.arity == 2)))


def live_nodes(nodes: list[ci.Cursor]) -> list[ci.Cursor]:
    """nodes without those of the branches taken when such a call fails (`if (rc) fail(...)` after
    `rc = pthread_mutex_unlock(m)`; `if (pthread_cond_wait(c, m) != 0) ...`)."""
    dead = []
    for node in nodes:
        if node.kind == K.IF_STMT:
            kids = child_nodes(node)
            if len(kids) >= 2 and _tests_failure(kids[0], node):
                dead.append(offsets(kids[1]))
    if not dead:
        return nodes
    return [n for n in nodes if not _within(n, dead)]


def _tests_failure(cond: ci.Cursor, where: ci.Cursor) -> bool:
    """Is cond `X`, `X != 0` or `0 != X`, X one such call, an assignment of one, or a local
    assigned only from such calls?"""
    cond = _under_parens(cond)
    if cond.kind == K.BINARY_OPERATOR and operator(cond) == "!=":
        kids = child_nodes(cond)
        zero = [k for k in kids if _under_parens(k).kind == K.INTEGER_LITERAL and constant_value(k) == 0]
        if len(kids) != 2 or len(zero) != 1:
            return False
        cond = _under_parens(kids[1] if zero[0] == kids[0] else kids[0])
    return _failure_value(cond, where)


def _failure_value(expr: ci.Cursor, where: ci.Cursor) -> bool:
    if expr.kind == K.CALL_EXPR:
        return _direct(expr) and expr.referenced.spelling in _CANNOT_FAIL_ELSEWHERE
    if expr.kind == K.BINARY_OPERATOR and operator(expr) == "=":  # (rc = pthread_mutex_lock(m))
        kids = child_nodes(expr)
        return len(kids) == 2 and _failure_value(_under_parens(kids[1]), where)
    if expr.kind == K.DECL_REF_EXPR and expr.referenced is not None and expr.referenced.kind == K.VAR_DECL:
        return _assigned_only_failures(expr.referenced, where)
    return False


def _assigned_only_failures(var: ci.Cursor, where: ci.Cursor) -> bool:
    """Is the local var given no value but results of such calls (its initialiser and every
    assignment in its function), its address never taken?"""
    parent = var.semantic_parent
    if parent is None or parent.kind != K.FUNCTION_DECL or var.storage_class == ci.StorageClass.STATIC:
        return False
    usr = var.get_usr()
    init = [c for c in child_nodes(var) if c.kind.is_expression()]
    if init and not _failure_value(_under_parens(init[-1]), where):
        return False
    for node in preorder(parent):
        if node.kind in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR, K.UNARY_OPERATOR):
            kids = child_nodes(node)
            target = _under_parens(kids[0]) if kids else None
            if target is None or target.kind != K.DECL_REF_EXPR or target.referenced is None \
                    or target.referenced.get_usr() != usr:
                continue
            op = operator(node)
            if node.kind == K.UNARY_OPERATOR:
                if op in ("&", "++", "--"):
                    return False
                continue
            if node.kind == K.COMPOUND_ASSIGNMENT_OPERATOR or (op == "=" and not _failure_value(_under_parens(kids[1]), where)):
                return False
    return True


def _under_parens(expr: ci.Cursor) -> ci.Cursor:
    while expr.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
        kids = child_nodes(expr)
        if len(kids) != 1:
            break
        expr = kids[0]
    return expr


def _within(node: ci.Cursor, spans: list[tuple[int, int]]) -> bool:
    start = offsets(node)[0]
    return any(s <= start < e for s, e in spans)


def _direct(call: ci.Cursor) -> bool:
    target = call.referenced
    return target is not None and target.kind == K.FUNCTION_DECL


def _called(statement: ci.Cursor) -> str | None:
    """The function a statement that is one call calls by name (through casts: `(void) f()`)."""
    node = statement
    while node.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CSTYLE_CAST_EXPR):
        kids = [k for k in child_nodes(node) if k.kind.is_expression()]
        if len(kids) != 1:
            return None
        node = kids[0]
    return node.referenced.spelling if node.kind == K.CALL_EXPR and _direct(node) else None


def _first_argument_value(call: ci.Cursor) -> int | None:
    """The value of a call's first argument when it is an integer constant (libclang evaluates
    it, macros expanded), else None."""
    kids = child_nodes(call)
    return constant_value(kids[1]) if len(kids) >= 2 else None


def _takes_errno_address(node: ci.Cursor) -> bool:
    """`&errno` (errno is `(*__errno_location ())`): a pointer to this thread's errno."""
    if operator(node) != "&":
        return False
    inner = child_nodes(node)
    inner = _under_parens(inner[0]) if inner else None
    if inner is None or inner.kind != K.UNARY_OPERATOR or operator(inner) != "*":
        return False
    call = child_nodes(inner)
    call = _under_parens(call[0]) if call else None
    return call is not None and call.kind == K.CALL_EXPR and _direct(call) \
        and call.referenced.spelling == "__errno_location"


def defines_any(data: bytes, names: set[str]) -> bool:
    """Does this C text look like it defines one of these functions (`name(...) {`)?"""
    return bool(names) and _definition_of_any(frozenset(names)).search(data) is not None


@functools.lru_cache(maxsize=16)
def _definition_of_any(names: frozenset[str]) -> "re.Pattern[bytes]":
    """One pattern for all the names (the call graph asks it of every C file of the tree)."""
    return re.compile(rf"\b(?:{any_of(names)})\s*\([^;{{)]*\)\s*\{{".encode())


def mentions_any(data: bytes, words: set[str]) -> bool:
    """Does this C text name one of these identifiers?"""
    return bool(words) and _word_of_any(frozenset(words)).search(data) is not None


@functools.lru_cache(maxsize=16)
def _word_of_any(words: frozenset[str]) -> "re.Pattern[bytes]":
    return re.compile(rf"\b(?:{any_of(words)})\b".encode())
