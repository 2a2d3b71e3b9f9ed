"""Analysis of a tree with libclang: the lock vocabulary (macros, wrappers), then the regions.

Two passes, because a wrapper defined in one file (thread.c's item_lock) is used in others:
  1. vocabulary(): every file's lock macros and wrapper functions;
  2. regions_of(): every function's regions, read with that vocabulary.
"""

from dataclasses import dataclass, field
from pathlib import Path

import clang.cindex as ci

from rclify.cparse import ParsedFile
from rclify.ctokens import identifiers_used
from rclify.lockops import LockOp, Vocabulary, Wrapper, classify
from rclify.regions import Region, find_regions, stmt_range

K = ci.CursorKind


@dataclass
class FunctionRegions:
    function: ci.Cursor
    regions: list[Region] = field(default_factory=list)


def add_macros(parsed: ParsedFile, root: Path, vocab: Vocabulary) -> None:
    """Lock macros defined in the tree (not system headers), through any chain of macros."""
    pending = []
    in_tree: dict[str, bool] = {}  # file name -> under root (thousands of system macros: cache)
    for cursor in parsed.tu.cursor.get_children():
        if cursor.kind != K.MACRO_DEFINITION:
            continue
        file = cursor.location.file
        if file is None:
            continue
        name = file.name
        if name not in in_tree:
            in_tree[name] = Path(name).resolve().is_relative_to(root)
        if not in_tree[name]:
            continue
        definition = _macro_definition(cursor)
        if definition:
            pending.append(definition)
    changed = True
    while changed:  # a macro may be defined through another lock macro defined later
        changed = False
        for name, params, body in pending:
            changed |= vocab.add_macro(name, params, body)


def _macro_definition(cursor: ci.Cursor) -> tuple[str, tuple[str, ...], str] | None:
    tokens = list(cursor.get_tokens())
    if len(tokens) < 2:
        return None
    name = tokens[0].spelling
    params: list[str] = []
    body_from = 1
    adjacent = tokens[1].extent.start.offset == tokens[0].extent.end.offset
    if tokens[1].spelling == "(" and adjacent:
        i = 2
        while i < len(tokens) and tokens[i].spelling != ")":
            if tokens[i].spelling != ",":
                params.append(tokens[i].spelling)
            i += 1
        body_from = i + 1
    body = " ".join(t.spelling for t in tokens[body_from:])
    return name, tuple(params), body


def add_wrappers(parsed: ParsedFile, root: Path, vocab: Vocabulary) -> None:
    """Functions of this file whose body does nothing but lock/unlock one expression."""
    for fn in parsed.tu.cursor.get_children():
        if fn.kind != K.FUNCTION_DECL or not fn.is_definition() or not parsed.is_here(fn):
            continue
        op = wrapper_op(parsed, fn, vocab)
        if op is None:
            continue
        params = [c for c in fn.get_children() if c.kind == K.PARM_DECL]
        vocab.wrappers[fn.spelling] = Wrapper(
            name=fn.spelling, kind=op.kind, params=tuple(p.spelling for p in params),
            param_types=tuple(p.type.spelling for p in params), expr=op.mutex,
            file=str(parsed.path.relative_to(root)), is_static=fn.storage_class == ci.StorageClass.STATIC,
            start_offset=fn.extent.start.offset, end_offset=fn.extent.end.offset,
        )


def wrapper_op(parsed: ParsedFile, fn: ci.Cursor, vocab: Vocabulary) -> LockOp | None:
    body = next((c for c in fn.get_children() if c.kind == K.COMPOUND_STMT), None)
    if body is None:
        return None
    statements = list(body.get_children())
    if len(statements) != 1:
        return None
    stmt = statements[0]
    text = parsed.text(*stmt_range(parsed, stmt))
    if stmt.kind == K.RETURN_STMT:
        text = text.strip()[len("return"):]
    op = classify(text, vocab)
    if op is None or op.kind not in ("lock", "unlock"):
        return None
    locals_ = {c.spelling for c in fn.walk_preorder() if c.kind == K.VAR_DECL}
    if identifiers_used(op.mutex) & locals_:
        return None
    return op


def _may_lock(parsed: ParsedFile, fn: ci.Cursor, names: set[bytes]) -> bool:
    """A cheap text test before the AST walk: most functions never name a lock operation."""
    text = parsed.data[fn.extent.start.offset : fn.extent.end.offset]
    return any(name in text for name in names)


def regions_of(parsed: ParsedFile, vocab: Vocabulary) -> list[FunctionRegions]:
    names = {n.encode() for n in vocab.names()}
    out = []
    for fn in parsed.tu.cursor.get_children():
        if fn.kind != K.FUNCTION_DECL or not fn.is_definition() or not parsed.is_here(fn):
            continue
        if fn.spelling in vocab.wrappers:
            continue  # a wrapper's lock is released by another wrapper, by design
        if not _may_lock(parsed, fn, names):
            continue
        regions = find_regions(parsed, fn, vocab)
        if regions:
            out.append(FunctionRegions(fn, regions))
    return out


# Thread-local state: a section that uses it must run on its own thread, not on an RCL server.
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
