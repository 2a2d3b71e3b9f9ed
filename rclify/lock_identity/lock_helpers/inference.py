"""Inference: which functions of the tree are lock helpers (_helper_of(), read to a fixpoint, a helper
creating its lock through another one) and every call of them (infer())."""

import re

from rclify.ctext.preprocessor import defines
from rclify.ctext.tokens import call_arguments
from rclify.lock_identity import init_aliases
from rclify.lock_identity.lock_helpers.c_text import (
    INIT, MAX_MACRO_DEPTH, Source, assigned_to, calls_in, line_col, read_sources,
)
from rclify.lock_identity.lock_helpers.helper_calls import call_sites
from rclify.lock_identity.lock_helpers.helper_macros import aliases, init_macros, with_macro_inits
from rclify.lock_identity.lock_helpers.lock_expressions import bare, root
from rclify.lock_identity.lock_helpers.model import Function, Helper, HelperCall, HelperLock, Helpers
from rclify.lock_identity.lock_helpers.names import Names

# What a helper may call besides the init: memory, attributes and condvars, failure reports.
_ALLOWED = {
    "malloc", "calloc", "realloc", "reallocarray", "aligned_alloc", "posix_memalign", "memalign", "valloc",
    "free", "memset", "memcpy", "bzero", "explicit_bzero", "strdup", "strndup", "strlen", "offsetof",
    "pthread_cond_init", "pthread_cond_destroy", "pthread_mutex_destroy",
    "abort", "exit", "_exit", "assert", "__assert_fail", "__assert_rtn", "__assert", "perror", "strerror",
    "fprintf", "printf", "fputs", "puts", "err", "errx", "warn", "warnx", "syslog",
}
_ALLOWED_PREFIXES = ("pthread_mutexattr_", "pthread_condattr_", "__builtin_")


def _allowed(name: str, lookup, tree_macros: dict[str, str], depth: int = 0) -> bool:
    if name in _ALLOWED or name.startswith(_ALLOWED_PREFIXES) or name == INIT or lookup(name):
        return True
    body = tree_macros.get(name)
    if body is None or depth > MAX_MACRO_DEPTH:
        return False
    return all(_allowed(n, lookup, tree_macros, depth + 1) for n, _, _ in calls_in(body, 0, len(body)))


def _returned_local(code: str, fn: Function, name: str) -> bool:
    """Is name a pointer local of fn that fn returns (and fn returns nothing else but NULL/0)?"""
    body = code[fn.body_start : fn.body_end]
    if not re.search(rf"(?:\w|\*)\s*\*\s*{re.escape(name)}\s*(?:=|;|,)", body):
        return False  # not declared here as a pointer: a global, or not a pointer
    returns = [bare(r) for r in re.findall(r"\breturn\b([^;]*);", body)]
    return name in returns and all(r in (name, "NULL", "0", "(void*)0", "") for r in returns)


def _returned_call(code: str, at: int, fn: Function, is_helper) -> bool:
    """Is the call at offset `at` returned as it is (`return new_lock(0);`, `return (T *) f(..);`),
    and does fn return nothing else than such calls of helpers, NULL and 0?"""
    before = code[fn.body_start + 1 : at]
    statement = re.split(r"[;{}]", before)[-1]
    if not re.fullmatch(r"\s*return\s*(?:\(\s*(?:const\s+)?(?:struct\s+)?[A-Za-z_]\w*\s*\*\s*\)\s*)?", statement):
        return False
    body = code[fn.body_start : fn.body_end]
    for r in re.findall(r"\breturn\b([^;]*);", body):
        value = bare(r)
        called = re.match(r"([A-Za-z_]\w*)\(", value)
        if value not in ("NULL", "0", "(void*)0", "") and not (called and is_helper(called.group(1))):
            return False
    return True


def _helper_of(src: Source, fn: Function, names: Names, tree_macros: dict[str, str]) -> Helper | None:
    """fn read as a helper, given the helpers known so far; None when it is not one."""
    code = src.code
    lookup = lambda name: names.lookup(name, src.file)  # noqa: E731
    calls = list(calls_in(code, fn.body_start, fn.body_end))
    if not any(name == INIT or lookup(name) for name, _, _ in calls):
        return None
    # A call of another function of the program (pigz's new_lock_() allocates through its own
    # my_malloc() and reports errors through its own fail()) is allowed when that function can
    # neither create nor take a lock (names.lockless(): through the tree's call graph it reaches
    # no pthread lock API and no helper) and is not handed the object the lock lives in (below:
    # uv_loop_init(loop) hands `loop` to uv_async_init() and the rest of the loop's set-up, and
    # stays no helper).  Calls it makes through function pointers (pigz's my_malloc_f, the
    # program's yarn_abort) are not followed: at run time RCL_LOCK_SITE redirects only the inits
    # at the helper's own init sites, so a lock such a call takes or creates elsewhere keeps its
    # own configuration; only a lock it created through the same helper again would take the
    # outer call's (a configuration of the program all the same).
    program = {name for name, _, _ in calls
               if not _allowed(name, lookup, tree_macros) and names.lockless(name, src.file)}
    if not all(_allowed(name, lookup, tree_macros) or name in program for name, _, _ in calls):
        return None
    locks: dict[tuple[int, str], HelperLock] = {}
    for name, at, open_at in calls:
        callee = lookup(name) if name != INIT else None
        if name != INIT and callee is None:
            continue
        found = call_arguments(code, open_at)
        if found is None:
            return None
        args = found[0]
        if callee is None:
            created = [(args[0] if args else "", [(src.file, line_col(code, at)[0])])]
        else:
            helper_args = names.helper_args(name, args)
            if helper_args is None:
                return None
            call = HelperCall(src.file, 0, 0, fn.name, callee, helper_args, assigned_to(code, at, fn), False)
            returned = _returned_call(code, at, fn, lambda n: names.lookup(n, src.file) is not None)
            created = [((-1, lock.path) if lock.param < 0 and returned else call.lock_expression(lock), lock.inits)
                       for lock in callee.locks]
        for expr, inits in created:
            if isinstance(expr, tuple):  # `return new_thing(..)`: what it returns, fn returns
                param, path = expr
            elif (found_root := root(expr)) is None:
                return None
            elif found_root[0] in fn.params:
                param, path = fn.params.index(found_root[0]), found_root[1]
            elif _returned_local(code, fn, found_root[0]):
                param, path = -1, found_root[1]
            else:
                return None
            lock = locks.setdefault((param, path), HelperLock(param, path))
            lock.inits += [i for i in inits if i not in lock.inits]
    if program:  # the program's functions it calls are not handed what the locks hang from
        roots = {fn.params[lock.param] if lock.param >= 0 else returned for lock in locks.values()
                 for returned in [next((r for r in re.findall(r"\breturn\b\s*\(?\s*([A-Za-z_]\w*)", code[fn.body_start:fn.body_end])
                                         if r not in ("NULL", "0")), "")]}
        for name, _, open_at in calls:
            found = call_arguments(code, open_at) if name in program else None
            if found and any(set(re.findall(r"[A-Za-z_]\w*", a)) & roots for a in found[0]):
                return None
    return Helper(fn.name, src.file, fn.line, fn.params, fn.returns_void, list(locks.values()))


def infer(texts: dict[str, str]) -> Helpers:
    """The lock helpers of a tree ({file: text}) and every call of them (see the module)."""
    sources = read_sources(texts)
    tree_macros: dict[str, str] = {}
    definitions: dict[str, list[tuple[str, int, tuple[str, ...], str]]] = {}
    for src in sources:
        for d in defines(texts[src.file]):  # every #if branch's: a macro defined twice is no alias
            if d.params is not None:
                tree_macros[d.name] = d.body
                definitions.setdefault(d.name, []).append((src.file, d.line, d.params, d.body))
        for name, line, params, body in init_aliases.definitions(texts[src.file], src.file):
            tree_macros[name] = body  # `#define my_init pthread_mutex_init`: an init macro (init_aliases.py)
            definitions.setdefault(name, []).append((src.file, line, params, body))
    names = Names(sources, tree_macros)
    names.init_macros = init_macros(definitions, texts, names.defs)
    for macro in names.init_macros.values():
        names.helper[(macro.file, macro.name)] = macro
    helper_names: set[str] = set(names.init_macros)
    changed = True
    while changed:  # a helper may create its lock through another one (or through a macro alias)
        changed = False
        names.aliases = aliases(definitions, helper_names.__contains__, names.defs, names.init_macros)
        # a name a helper's body must call (_helper_of's first test) is written in it: most files
        # and bodies name none, and reading a body's calls tokenizes its whole file
        needed = [INIT, *helper_names, *names.aliases]  # and each helper as it is found
        for src in sources:
            if not any(name in src.code for name in needed):
                continue
            for fn in src.functions:
                if (src.file, fn.name) in names.helper:
                    continue
                if not any(name in src.code[fn.body_start : fn.body_end] for name in needed):
                    continue
                helper = _helper_of(src, fn, names, tree_macros)
                if helper is not None:
                    with_macro_inits(helper, names.init_macros.get(fn.name))
                    names.helper[(src.file, fn.name)] = helper
                    helper_names.add(fn.name)
                    needed.append(fn.name)
                    changed = True
    for helper in names.helper.values():
        helper.aliases = {a.name: a for a in names.aliases.values() if a.helper == helper.name}
    result = Helpers(by_file=dict(names.helper))
    result.helpers = {h.name: h for h in sorted(names.helper.values(), key=lambda h: (h.file, h.line), reverse=True)}
    if names.helper:
        result.calls = call_sites(sources, names)
    return result
