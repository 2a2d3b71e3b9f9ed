"""The tree's lock macros and wrapper functions, inferred with libclang into the Vocabulary
(add_macros, add_wrappers): a #define whose body is a lock operation (through chains of macros
and wrappers), a function whose body is one (wrapper_shape).

A wrapper function (wrapper_shape) locks or unlocks one expression of its parameters; its result
may be checked, it may do work of its own under the lock (copied into the sections it opens or
closes), and a guard's constructor returns the mutex it locked.
"""

from dataclasses import dataclass

import clang.cindex as ci

from rclify.ctext import cparse
from rclify.ctext.cparse import ParsedFile, statement_range
from rclify.ctext.cursors import child_nodes, preorder, top_level
from rclify.ctext.preprocessor import guards_at
from rclify.ctext.tokens import identifiers_used, matching_bracket, normalize, tokenize
from rclify.transform.lock_statements.calls import classify
from rclify.transform.lock_statements.checked import checks_result
from rclify.ctext.source_tree import SourceTree
from rclify.transform.vocabulary import LockOp, Vocabulary, Wrapper

K = ci.CursorKind


def add_macros(parsed: ParsedFile, tree: SourceTree, vocab: Vocabulary) -> None:
    """Lock macros defined in the tree (not system headers), through any chain of macros and
    wrappers (those that name a wrapper found later are kept pending until then)."""
    texts: dict[str, bytes] = {str(parsed.path): parsed.data}  # file name -> its bytes, for the #if lines around a definition
    listed = top_level(parsed.tu)
    for file, _, start, row in listed.macro_definitions:
        if file is None:
            continue
        rel = tree.under(file)  # thousands of system macros, in a few hundred files: asked once each
        if rel is None:
            continue  # a system macro
        where = (file, start)
        if where in vocab.read:
            continue  # read through another file
        vocab.read.add(where)
        cursor = listed.cursor(row)
        definition = macro_definition(cursor)
        if definition:
            macro, params, body = definition
            if file not in texts:
                try:
                    texts[file] = tree.data(rel)
                except OSError:
                    texts[file] = b""
            conditions = tuple(guards_at(texts[file], start))
            vocab.add_definition(macro, params, body, conditions, where)
    vocab.resolve()


def macro_definition(cursor: ci.Cursor, data: bytes | None = None) -> tuple[str, tuple[str, ...], str] | None:
    """(name, parameters, body) of a macro definition cursor: the body's tokens joined by spaces,
    or, given the bytes of its file, its text as written (continuation lines kept as lines, so
    that a `//` comment ends where it did)."""
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
    if data is None or body_from >= len(tokens):
        return name, tuple(params), " ".join(_spliced(t.spelling) for t in tokens[body_from:])
    start, end = tokens[body_from].extent.start.offset, tokens[-1].extent.end.offset
    return name, tuple(params), data[start:end].decode("utf-8", errors="surrogateescape").replace("\\\n", "\n")


def _spliced(spelling: str) -> str:
    """A token's spelling without line continuations: libclang's token after `\\` and a newline
    starts at the backslash (Berkeley DB's `return (DB_RUNRECOVERY);  \\` then `} while (0)` on
    the next line gives the token `\\` newline `}`), which the preprocessor reads as `}`."""
    return spelling.replace("\\\r\n", "").replace("\\\n", "")


def add_wrappers(parsed: ParsedFile, tree: SourceTree, vocab: Vocabulary) -> None:
    """Functions of this file, and of the tree's headers it includes (`static inline` ones), that
    lock or unlock one expression (wrapper_shape); then the macros written over them, and the
    wrappers written over those, to a fixpoint."""
    files: dict[str, tuple[bytes, bool] | None] = {str(parsed.path): (parsed.data, False)}
    views: dict[str, ParsedFile] = {str(parsed.path): parsed}
    candidates = []  # the functions of this file and of the tree's headers, with their text
    for name, fn in top_level(parsed.tu).function_definitions:
        if name is None:
            continue
        if name not in files:  # a header: only one under the tree's root
            rel = tree.under(name)
            files[name] = (tree.data(rel), True) if rel is not None else None
        if files[name] is not None:
            data, in_header = files[name]
            candidates.append((name, fn, fn.spelling, in_header, data[fn.extent.start.offset : fn.extent.end.offset]))
    while True:
        names = [n.encode() for n in vocab.names()]
        found = False
        for name, fn, spelling, in_header, text in candidates:
            known = vocab.wrappers.get(spelling)
            twin = known is not None and known.is_static and fn.storage_class == ci.StorageClass.STATIC
            if known is not None and not twin:
                continue
            if not any(n in text for n in names):
                continue  # the cheap test first: most functions name no lock operation
            if name not in views:
                views[name] = cparse.view(parsed, name, files[name][0])
            here = views[name]
            shape = wrapper_shape(here, fn, vocab.for_file(here, fn))  # as its unit reads its body
            if shape is None:
                continue
            params = [c for c in child_nodes(fn) if c.kind == K.PARM_DECL]
            wrapper = Wrapper(
                name=fn.spelling, kind=shape.op.kind, params=tuple(p.spelling for p in params),
                param_types=tuple(p.type.spelling for p in params), expr=shape.op.mutex,
                file=tree.rel(here.path), is_static=fn.storage_class == ci.StorageClass.STATIC,
                start_offset=fn.extent.start.offset, end_offset=fn.extent.end.offset, in_header=in_header,
                work=shape.work, work_line=shape.work_line, returns_mutex=shape.returns_mutex,
                checks=shape.checks, checks_line=shape.checks_line,
                inner=shape.op.wrapper, identity=shape.op.wrapper_expr if shape.op.wrapper is not None else "",
            )
            if twin:
                if wrapper.file != known.file:
                    vocab.static_twins.setdefault((wrapper.file, wrapper.name), wrapper)
                continue
            vocab.wrappers[fn.spelling] = wrapper
            found = True
        if not (found and vocab.resolve()):
            return


@dataclass(frozen=True)
class WrapperShape:
    op: LockOp  # the lock or unlock, its expression in terms of the parameters
    work: str = ""
    work_line: int = 0
    returns_mutex: bool = False
    checks: str = ""  # a lock's checks of its arguments before the call (its accessor runs them)
    checks_line: int = 0


# work that cannot be copied into a section: it would wait there, share a static with its original,
# name another function, or jump across functions


_NOT_COPIED = {"pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", "static", "__func__",
               "__FUNCTION__", "__PRETTY_FUNCTION__", "setjmp", "_setjmp", "sigsetjmp", "__sigsetjmp", "longjmp",
               "siglongjmp", "_longjmp", "va_start", "va_arg", "va_end", "va_copy", "__builtin_va_start"}


def wrapper_shape(parsed: ParsedFile, fn: ci.Cursor, vocab: Vocabulary) -> WrapperShape | None:
    """What a function's body does, if it is a lock wrapper: one lock or unlock statement on an
    expression of its parameters and file-scope names (`pthread_mutex_lock(&l->m);`,
    `return pthread_mutex_unlock(m);`), and besides it only
      - before a lock, checks of its arguments (`assert(l);`, _only_checks): its accessor runs them;
      - declarations without initializer (`int r;`) and a test of the call's result with no else
        (`int r = pthread_mutex_lock(&l->m); if (r) fail(r, file, line);`): dropped, as for a
        checked lock statement (the runtime aborts when it cannot lock);
      - work of its own after a lock or before an unlock (`q->ready = 1;
        pthread_cond_broadcast(&q->cv); pthread_mutex_unlock(&q->m);`): it runs under the lock,
        so it is part of every section the wrapper opens or closes; copied, as the wrapper's
        work function, when it has no jump out, no other lock operation, no condvar wait, no
        static local, setjmp, va_list or __func__;
      - `return M;` after locking M: a constructor of `__attribute__((cleanup))` lock guards.
    None for anything else."""
    body = next((c for c in child_nodes(fn) if c.kind == K.COMPOUND_STMT), None)
    if body is None:
        return None
    statements = child_nodes(body)
    ops = []
    naming = vocab.naming()
    for i, stmt in enumerate(statements):
        start, end = statement_range(parsed, stmt)
        if not naming.search(parsed.data, start, end):
            continue  # names no lock operation: none (classify reads through those names)
        text = parsed.text(start, end)
        if stmt.kind == K.RETURN_STMT:
            text = text.strip()[len("return"):]
        op = classify(text, vocab)
        if op is not None:
            ops.append((i, op))
            if len(ops) > 1:
                return None  # a wrapper performs one lock operation
    if len(ops) != 1 or ops[0][1].kind not in ("lock", "unlock"):
        return None
    at, op = ops[0]
    if identifiers_used(op.mutex) & {c.spelling for c in preorder(fn) if c.kind == K.VAR_DECL}:
        return None  # the mutex is reached through a local: no accessor can say which
    before, after = statements[:at], statements[at + 1 :]
    if after and checks_result(parsed.text(*statement_range(parsed, after[0])), op):
        after = after[1:]
    result_variable = next((t.text for t in reversed(tokenize(op.result.split("=")[0])) if t.kind == "ident"), "")
    while after and _only_reads_result(parsed.text(*statement_range(parsed, after[0])), result_variable):
        after = after[1:]  # `assert(ret == 0); (void)ret;` (xz): the runtime's result is 0
    returns_mutex = op.kind == "lock" and len(after) == 1 and after[0].kind == K.RETURN_STMT \
        and normalize(parsed.text(*statement_range(parsed, after[0])).strip()[len("return"):].rstrip(";")) \
        == normalize(op.mutex)
    if returns_mutex:
        after = []
    uninitialised = [s for s in before if _declares_without_initializer(s)]
    checks = []
    if op.kind == "lock":
        locals_ = {c.spelling for c in preorder(fn) if c.kind == K.VAR_DECL}
        checks = [s for s in before if s not in uninitialised
                  and _only_checks(parsed.text(*statement_range(parsed, s)), locals_, vocab)]
        if len(uninitialised) + len(checks) != len(before):
            return None  # work before the lock is not under it
        work = after
    else:
        if after:
            return None  # work after the unlock is not under it
        work = [s for s in before if s not in uninitialised]
    checked = " ".join(parsed.text(*statement_range(parsed, s)).strip() for s in checks)
    checks_line = checks[0].extent.start.line if checks else 0
    if not work:
        return WrapperShape(op, returns_mutex=returns_mutex, checks=checked, checks_line=checks_line)
    text = parsed.text(statement_range(parsed, work[0])[0], statement_range(parsed, work[-1])[1])
    used = identifiers_used(text)
    if any(_jumps_out(s) for s in work) or used & vocab.names() or any(t.text in _NOT_COPIED for t in tokenize(text)):
        return None
    declarations = [parsed.text(*statement_range(parsed, s)).strip() for s in uninitialised
                    if {c.spelling for c in child_nodes(s)} & used]
    return WrapperShape(op, " ".join([*declarations, text]), work[0].extent.start.line, checks=checked,
                        checks_line=checks_line)


def _only_checks(text: str, locals_: set[str], vocab: Vocabulary) -> bool:
    """Is text `assert(E);` with E reading only parameters, file-scope names and constants: no
    call, assignment, increment or local (the MapReduce library's `lock_acquire(l)`, `assert(l);`
    before the lock call)?  It changes nothing and reads nothing the lock protects that a caller
    could not read: the wrapper's accessor runs it, before the section takes the lock, as the
    wrapper ran it before locking."""
    tokens = [t for t in tokenize(text) if t.text != ";"]
    if len(tokens) < 4 or tokens[0].text != "assert" or tokens[1].text != "(" \
            or matching_bracket(tokens, 1) != len(tokens) - 1:
        return False
    inner = tokens[2:-1]
    for i, t in enumerate(inner):
        if t.text in _EFFECTS or (t.text == "(" and i > 0 and inner[i - 1].kind == "ident"
                                  and inner[i - 1].text != "sizeof"):
            return False
    return not ({t.text for t in inner if t.kind == "ident"} & (locals_ | vocab.names()))


_EFFECTS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"}


def _only_reads_result(text: str, result: str) -> bool:
    """Is text `(void)R;` or `assert(...)` of an expression reading nothing but the call's
    result variable R and constants (no assignment, no call)?"""
    if not result:
        return False
    tokens = [t for t in tokenize(text) if t.text != ";"]
    texts = [t.text for t in tokens]
    if texts in (["(", "void", ")", result], ["(", "void", ")", "(", result, ")"]):
        return True
    if len(tokens) < 4 or texts[0] != "assert" or texts[1] != "(" or matching_bracket(tokens, 1) != len(tokens) - 1:
        return False
    inner = tokens[2:-1]
    return all(t.kind == "number" or t.text == result or (t.kind == "punct" and t.text in _COMPARISONS)
               for t in inner) and result in texts


_COMPARISONS = {"==", "!=", "<", ">", "<=", ">=", "!", "(", ")", "&&", "||"}


def _declares_without_initializer(stmt: ci.Cursor) -> bool:
    return stmt.kind == K.DECL_STMT and all(
        c.kind == K.VAR_DECL and not any(x.kind.is_expression() or x.kind == K.INIT_LIST_EXPR for x in child_nodes(c))
        and c.storage_class != ci.StorageClass.STATIC
        for c in child_nodes(stmt))


def _jumps_out(stmt: ci.Cursor) -> bool:
    """Does the statement hold a return, goto or label (its copy could not behave the same), or a
    break/continue that is not inside a loop or switch of its own?"""
    def visit(node: ci.Cursor, breakable: bool, loop: bool) -> bool:
        if node.kind in (K.RETURN_STMT, K.GOTO_STMT, K.INDIRECT_GOTO_STMT, K.LABEL_STMT):
            return True
        if (node.kind == K.BREAK_STMT and not breakable) or (node.kind == K.CONTINUE_STMT and not loop):
            return True
        inner_loop = loop or node.kind in (K.FOR_STMT, K.WHILE_STMT, K.DO_STMT)
        inner_breakable = breakable or inner_loop or node.kind == K.SWITCH_STMT
        return any(visit(c, inner_breakable, inner_loop) for c in child_nodes(node))
    return visit(stmt, False, False)
