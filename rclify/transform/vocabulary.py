"""The lock vocabulary: what counts as a lock operation in this tree, and recognising one.

The one place where the tree's lock idioms are known: its lock macros and wrapper functions are
inferred here (with libclang: add_macros, add_wrappers), and statements are read here as lock
operations through them (classify, lock_calls, scoped_lock, guard_lock).  analyse.py decides
which files to parse; regions.py and region_bounds.py walk what these functions recognise.

A statement is read from its source text (so macro invocations are seen as written):
    pthread_mutex_lock(&m);                      direct call
    LOCK(m);  mutex_lock(&m);                    lock macros, expanded here from their #define (only
                                                 the #if branch the build compiles: libclang's)
    LOCKED(stats);                               ... with `##` / `#` (&name##_lock) and __VA_ARGS__
    {pthread_mutex_lock(&(tbl->locks[i]));}      braces left by macro expansion
    do { pthread_mutex_lock(&m); } while (0);
    (void)pthread_mutex_unlock(&m);
    if (pthread_mutex_lock(&m) != 0) abort();    checked result with a no-return failure path
    err = pthread_mutex_lock(&m);                the result kept (0 in the caller)
    item_lock(hv);  take(l);                     wrapper functions, through macros too
                                                 (`#define take(l) take_(l, __FILE__, __LINE__)`)
Statements that hold a lock for a block (scoped lock statements):
    WITH_LOCK(m) { ... }                         a `for` locking in its first clause, unlocking in
                                                 its third, running its body once (scoped_lock);
    mythread_sync(m) { ... }                     or locking and unlocking in its condition's two
                                                 arms, its body in a run-once `for` (xz)
    GUARD(m);                                    a `__attribute__((cleanup))` variable holding the
                                                 lock to the end of its block (guard_lock)
A wrapper function (wrapper_shape) locks or unlocks one expression of its parameters; its result
may be checked, it may do work of its own under the lock (copied into the sections it opens or
closes), and a guard's constructor returns the mutex it locked.
"""

from dataclasses import dataclass, field, replace
from pathlib import Path

import clang.cindex as ci

from rclify import pthread_api
from rclify.ctext import cparse
from rclify.ctext.cparse import ParsedFile, statement_range
from rclify.ctext.cursors import child_nodes, preorder, top_level
from rclify.ctext.preprocessor import guards_at
from rclify.ctext.tokens import (Token, identifiers_used, matching_bracket, normalize, pretty, split_args, tokenize,
                                 top_level_split)

K = ci.CursorKind

# a lock with a deadline (timedlock: it may fail with ETIMEDOUT) is never extracted, see region_bounds.py
PTHREAD_OPS = pthread_api.LOCK_OPERATIONS
PTHREAD_ARITY = pthread_api.LOCK_ARITY  # the others take the mutex only
TIMED_LOCKS = {name for name, kind in PTHREAD_OPS.items() if kind == "timedlock"}
_MAX_EXPANSION_DEPTH = 8


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...]
    body: str
    # the #if lines its definition sits under (zstd's ZSTD_pthread_mutex_lock(a) is
    # pthread_mutex_lock((a)) under `#if DEBUGLEVEL < 1`, pthread_mutex_lock(*(a)) else)
    conditions: tuple[str, ...] = ()
    site: tuple[str, int] = ("", -1)  # (file, offset) of its #define, when read with libclang


@dataclass(frozen=True)
class Wrapper:
    """A function that locks or unlocks one expression (see wrapper_shape for what its body may
    hold besides: a check of the result, work of its own, a `return` of the mutex)."""

    name: str
    kind: str
    params: tuple[str, ...]
    param_types: tuple[str, ...]  # type spellings, for the accessor's prototype
    expr: str  # the pthread_mutex_t * expression, in terms of params and file-scope names
    file: str
    is_static: bool
    start_offset: int  # where the definition starts
    end_offset: int  # where the definition ends (the accessor is emitted there)
    in_header: bool = False  # a header's function: its accessor is `static inline`, next to it
    work: str = ""  # its statements that are not the lock call: after a lock, before an unlock
    work_line: int = 0  # the line they start on (the generated copy keeps it with #line)
    returns_mutex: bool = False  # `lock(m); return m;`: a cleanup guard's constructor
    # a wrapper over another wrapper (libuv's os390 `before_fork()` over `uv_mutex_lock(&l)`): that
    # one, whose accessor expr calls, and the mutex itself, `&l` (what identifies the lock, and
    # pairs the lock with an unlock through another wrapper)
    inner: "Wrapper | None" = None
    identity: str = ""

    def chain(self) -> list["Wrapper"]:
        """This wrapper and those it goes through, outermost first."""
        out, w = [], self
        while w is not None:
            out.append(w)
            w = w.inner
        return out

    @property
    def accessor(self) -> str:
        return f"rclify_mutex_of_{self.name}"

    @property
    def work_function(self) -> str:
        """A copy of the wrapper's work, called at the start (lock) or end (unlock) of every section
        extracted around the wrapper's calls: the work ran under the lock, it still does."""
        return f"rclify_work_of_{self.name}"

    @property
    def storage(self) -> str:
        """The storage class of the accessor and work function: the wrapper's, `static inline` in a
        header (each file that includes it defines them, no unused-function warning)."""
        return "static inline " if self.in_header else "static " if self.is_static else ""


@dataclass(frozen=True)
class LockOp:
    kind: str  # lock | unlock | trylock | timedlock (pthread_mutex_timedlock and _clocklock)
    mutex: str  # a pthread_mutex_t * expression valid where the statement stands
    key: str  # identity of the lock, for pairing a lock with its unlock
    via: str = ""  # macro or wrapper the call was reached through
    checked: bool = False  # result tested, failure path does not return
    wrapper: Wrapper | None = None
    wrapper_expr: str = ""  # for a wrapper call: the mutex expression with the arguments in
    result: str = ""  # C that keeps the variable the call's result went to: "err = 0;", "int err = 0;"
    work: str = ""  # a wrapper's own work, run in the section: "rclify_work_of_done((q));" (Wrapper.work)
    conditions: tuple[str, ...] = ()  # #if lines of the macros it was read through (Macro.conditions)
    # an unlock statement whose argument increments a variable (`unlock(&slots[i++].m);`): the
    # variables; the key is the lock it releases (`&slots[i].m`), `result` runs the increments
    effect_vars: tuple[str, ...] = ()


@dataclass
class Vocabulary:
    """What counts as a lock operation: pthread calls, plus the program's macros and wrappers."""

    macros: dict[str, Macro] = field(default_factory=dict)
    wrappers: dict[str, Wrapper] = field(default_factory=dict)
    # the tree's other #defines, kept until what they name is known (a macro over a wrapper:
    # `#define take(l) take_(l, __FILE__, __LINE__)`): name -> its definitions (a name may be
    # defined differently for different files), each (params, body, identifiers, #if lines, site:
    # (file, offset) when read with libclang)
    pending: dict[str, list[tuple[tuple[str, ...], str, frozenset[str], tuple[str, ...], tuple[str, int] | None]]] = \
        field(default_factory=dict)
    read: set[tuple[str, int]] = field(default_factory=set)  # #define directives read: (file, offset)
    # static wrappers defined again, under the same name, in another file (libmicrohttpd's
    # MHD_ip_count_lock in src/lib/ and src/microhttpd/): (file, name) -> that file's own
    static_twins: dict[tuple[str, str], "Wrapper"] = field(default_factory=dict)
    # a lock macro's every #define read, by site, with the identifiers its body names: memcached's
    # extstore.c and proxy.h each define STAT_L(x), over different mutexes
    definitions: dict[str, dict[tuple[str, int], tuple[Macro, frozenset[str]]]] = field(default_factory=dict)

    def for_file(self, parsed: ParsedFile) -> "Vocabulary":
        """The vocabulary as the file's translation unit sees it: of a lock macro defined
        differently in several files, the definition libclang saw for this file (the last one
        before its end, as the preprocessor does)."""
        several = {name: defs for name, defs in self.definitions.items() if len(defs) > 1}
        if not several:
            return self
        seen: dict[str, tuple[str, int]] = {}
        for file, cursor in top_level(parsed.tu).macro_definitions:
            if file is not None and cursor.spelling in several:
                seen[cursor.spelling] = (file, cursor.extent.start.offset)
        macros, names = dict(self.macros), self.names()
        for name, site in seen.items():
            if site not in several[name]:
                continue
            macro, idents = several[name][site]
            if idents & names:
                macros[name] = macro
            else:  # this file's definition is no lock operation
                macros.pop(name, None)
        return replace(self, macros=macros) if macros != self.macros else self

    def names(self) -> set[str]:
        return set(PTHREAD_OPS) | set(self.macros) | set(self.wrappers)

    def add_macro(self, name: str, params: tuple[str, ...], body: str, conditions: tuple[str, ...] = ()) -> bool:
        """Keeps a #define if its body uses a known lock operation, else until one it names
        becomes one (resolve()); says if it was kept as a lock macro."""
        if name in self.macros:
            return False
        self.add_definition(name, params, body, conditions, None)
        return self.resolve() and name in self.macros

    def resolve(self) -> bool:
        """Moves the pending #defines that name a lock operation to the macros, through chains of
        them; says if any was."""
        found, changed = False, True
        while changed:
            changed = False
            names = self.names()
            for name, definitions in list(self.pending.items()):
                params, body, _, conditions, site = next((d for d in definitions if d[2] & names),
                                                         (None, None, None, (), None))
                if body is not None:  # the first definition read that locks
                    self.macros[name] = Macro(name, params, body, conditions, site or ("", -1))
                    del self.pending[name]
                    for d in definitions:
                        self._record(name, d)
                    changed = found = True
        return found

    def _record(self, name: str, definition: tuple) -> None:
        """Keeps one #define of a lock macro's name by its site (see for_file)."""
        params, body, idents, conditions, site = definition
        if site is not None:
            self.definitions.setdefault(name, {})[site] = (Macro(name, params, body, conditions, site), idents)

    def add_definition(self, name: str, params: tuple[str, ...], body: str, conditions: tuple[str, ...],
                       site: tuple[str, int] | None) -> None:
        """A #define read with libclang: pending until it (or another of its name) is a lock
        macro; one of a lock macro's name read later is kept as another definition of it."""
        definition = (params, body, frozenset(t.text for t in tokenize(body) if t.kind == "ident"), conditions, site)
        if name in self.macros:
            self._record(name, definition)
        else:
            self.pending.setdefault(name, []).append(definition)


# -- reading a statement as one lock operation ------------------------------------------------


def substitute(body: str, params: tuple[str, ...], args: list[str], parenthesize: bool = True) -> str | None:
    """Replaces macro/wrapper parameters by (argument) text, as the preprocessor does: `##`
    pastes the raw argument (`name##_lock`), `#p` makes it a string, `...` is __VA_ARGS__.
    None when the arguments do not fit the parameters or a `#` names no parameter.  An argument
    is put in parentheses (to be read as one expression) unless parenthesize is False: the exact
    text the preprocessor makes (`e->stats.stat` with stat = page_allocs)."""
    mapping = _arguments(params, args)
    if mapping is None:
        return None
    tokens = tokenize(body)
    out, paste = [], False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if i and not paste and tok.text != "##":
            out.append(body[tokens[i - 1].end : tok.start])  # the spacing as written
        if tok.text == "##":
            paste = True
            i += 1
            continue
        pasted = paste or (i + 1 < len(tokens) and tokens[i + 1].text == "##")
        if tok.text == "#" and params:
            if i + 1 >= len(tokens) or tokens[i + 1].text not in mapping:
                return None
            arg = mapping[tokens[i + 1].text]
            out.append('"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"')
            i += 1
        elif tok.kind == "ident" and tok.text in mapping:
            raw = pasted or tok.text == "__VA_ARGS__" or not parenthesize
            arg = _unparenthesized(mapping[tok.text]) if pasted else mapping[tok.text]
            out.append(arg if raw else f"({arg})")
        else:
            out.append(tok.text)
        paste = False
        i += 1
    if paste:
        return None  # `##` at the end of a body is ill-formed
    return body[: tokens[0].start] + "".join(out) if tokens else body


def _unparenthesized(arg: str) -> str:
    """A pasted argument without the parentheses an outer macro's substitution put around it
    (`helper(m, __LINE__)` passes `(__LINE__)` on; cpp pastes `i_ ## line` as `i___LINE__`): a
    token pasted to `(` would be ill-formed C, so they can only be ours."""
    tokens = tokenize(arg)
    while len(tokens) > 2 and tokens[0].text == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        arg = arg[tokens[1].start : tokens[-1].start]
        tokens = tokenize(arg)
    return arg


def _arguments(params: tuple[str, ...], args: list[str]) -> dict[str, str] | None:
    if params and params[-1] == "...":
        named = params[:-1]
        if len(args) < len(named):
            return None
        return dict(zip(named, args)) | {"__VA_ARGS__": ", ".join(args[len(named):])}
    if len(params) != len(args):
        return None
    return dict(zip(params, args))


def _statement_tokens(text: str, depth: int) -> list[Token]:
    """A statement's tokens without its final `;` ([] past the expansion depth)."""
    if depth > _MAX_EXPANSION_DEPTH:
        return []
    tokens = tokenize(text)
    while tokens and tokens[-1].text == ";":
        tokens.pop()
    return tokens


def classify(text: str, vocab: Vocabulary, depth: int = 0) -> LockOp | None:
    """The lock operation a statement's text performs, or None if it is not one."""
    tokens = _statement_tokens(text, depth)
    if not tokens:
        return None
    first = tokens[0].text
    if first == "{" and matching_bracket(tokens, 0) == len(tokens) - 1:
        return classify(text[tokens[0].end : tokens[-1].start], vocab, depth + 1)
    if first == "do" and len(tokens) > 6 and tokens[1].text == "{":
        close = matching_bracket(tokens, 1)
        tail = [t.text for t in tokens[close + 1 :]]
        if tail in (["while", "(", "0", ")"], ["while", "(", "false", ")"]):
            return classify(text[tokens[2].start : tokens[close].start], vocab, depth + 1)
        return None
    if first == "(" and len(tokens) > 3 and tokens[1].text == "void" and tokens[2].text == ")":
        return classify(text[tokens[3].start : tokens[-1].end], vocab, depth + 1)
    if (rest := _after_result_declaration(tokens, text)) is not None:
        op = classify(rest, vocab, depth + 1)  # `{ int e; if ((e = CALL) != 0) log(e); }`
        return replace(op, result="") if op is not None and op.checked else None
    if (expansion := _pass_through(tokens, text, vocab)) is not None:
        op = classify(expansion, vocab, depth + 1)  # `W(pthread_mutex_lock(l))`, `#define W(f) f`
        return replace(op, mutex=pretty(op.mutex)) if op is not None else None
    if first == "if" and len(tokens) > 3 and tokens[1].text == "(":
        return _classify_checked(tokens, text, vocab, depth)
    if first == "assert" and len(tokens) > 3 and tokens[1].text == "(" and matching_bracket(tokens, 1) == len(tokens) - 1:
        return _classify_asserted(text[tokens[2].start : tokens[-2].end], vocab, depth)
    if first == "(" and len(tokens) > 2 and matching_bracket(tokens, 0) == len(tokens) - 1:
        return classify(text[tokens[0].end : tokens[-1].start], vocab, depth + 1)
    if any(t.text in ("&&", "||") for t in tokens):
        return _classify_or_die(text[: tokens[-1].end], vocab, depth)
    if any(t.text == "=" for t in tokens):
        return _classify_assigned(tokens, text, vocab, depth)
    return _classify_call(tokens, text, vocab, depth)


def _after_result_declaration(tokens: list[Token], text: str) -> str | None:
    """The statement after a first one declaring variables with no initializer (`int e;`,
    `int e, f;`), when a macro's block declares where a checked lock call's result goes
    (`#define CHECKED(f) do { int e; if ((e = (f)) != 0) log_err(e); } while (0)`); else None.
    The variables are the block's own: nothing after the block can use them."""
    semicolon = next((i for i, t in enumerate(tokens) if t.text == ";"), None)
    if semicolon is None or semicolon < 2 or semicolon == len(tokens) - 1:
        return None
    declaration = tokens[:semicolon]
    if not all(t.kind == "ident" or t.text in ("*", ",") for t in declaration) \
            or declaration[-1].kind != "ident" or declaration[0].text in ("return", "goto", "break", "continue"):
        return None
    declared = {t.text for i, t in enumerate(declaration) if t.kind == "ident"
                and (i + 1 == len(declaration) or declaration[i + 1].text == ",")}
    rest = text[tokens[semicolon].end :]
    later = tokenize(rest)
    # one statement more, that uses the variables only as the check's result
    if any(t.text == ";" for t in later[:-1]) and later[-1].text == ";" and \
            sum(t.text == ";" for t in later) > 1:
        return None
    return rest if declared & {t.text for t in later} else None


def _pass_through(tokens: list[Token], text: str, vocab: Vocabulary) -> str | None:
    """The expansion of `NAME(args)`, a function-like macro of the tree that is no lock macro
    itself but is given a lock operation as an argument (`#define W(f) f`, a checking macro
    `#define CHECKED(f) do { ... (f) ... } while (0)` under `#define LOCK(l)
    CHECKED(pthread_mutex_lock(l))`); None when the statement is not that, or NAME has several
    different definitions (which one a file sees is not known here)."""
    if tokens[0].kind != "ident" or len(tokens) < 4 or tokens[1].text != "(" \
            or matching_bracket(tokens, 1) != len(tokens) - 1:
        return None
    definitions = {(d[0], d[1]) for d in vocab.pending.get(tokens[0].text, ())}
    if len(definitions) != 1:
        return None
    params, body = next(iter(definitions))
    if not params:
        return None
    args = split_args(text[tokens[1].end : tokens[-1].start])
    if not identifiers_used(" ".join(args)) & vocab.names():
        return None
    return substitute(body, params, args)


def lock_calls(text: str, vocab: Vocabulary, depth: int = 0) -> list[LockOp]:
    """Every lock operation text performs, in order, seen through the macros it invokes: for a
    statement classify() does not read as one lock operation (`WITH_LOCK(m, x++);` expands to a
    lock, the body and an unlock)."""
    if depth > _MAX_EXPANSION_DEPTH:
        return []
    tokens = tokenize(text)
    names = vocab.names()
    ops: list[LockOp] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.kind != "ident" or tok.text not in names:
            i += 1
            continue
        close = matching_bracket(tokens, i + 1) if i + 1 < len(tokens) and tokens[i + 1].text == "(" else i
        if close < 0:
            return ops
        call = text[tok.start : tokens[close].end]
        op = classify(call, vocab, depth + 1)
        macro = vocab.macros.get(tok.text)
        if op is not None:
            ops.append(op)
        elif macro is not None:
            args = split_args(text[tokens[i + 1].end : tokens[close].start]) if close > i else []
            body = substitute(macro.body, macro.params, args) if macro.params else macro.body
            found = lock_calls(body, vocab, depth + 1) if body is not None else []
            ops += [replace(o, mutex=pretty(o.mutex), via=o.via or macro.name, checked=False, result="",
                            conditions=_joined(macro.conditions, o.conditions)) for o in found]
        i = close + 1
    return ops


def _postfix_effects(expr: str) -> tuple[str, str, tuple[str, ...]] | None:
    """`&slots[i++].m` -> ('&slots[i].m', 'i++;', ('i',)): the lock an unlock statement releases is
    named by the values before its postfix increments; the increments run once, after it (the
    caller's, after the section: plan.check_unlock_effects says when that is sound).  None when
    expr has no postfix increment of a plain variable, or other side effects."""
    tokens = tokenize(expr)
    kept, increments, variables = [], [], []
    for i, tok in enumerate(tokens):
        if tok.text in ("++", "--") and i > 0 and tokens[i - 1].kind == "ident" \
                and (i < 2 or tokens[i - 2].text not in (".", "->")):
            increments.append(f"{tokens[i - 1].text}{tok.text};")
            variables.append(tokens[i - 1].text)
            continue
        if tok.text in ("++", "--", "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=") \
                or tok.text == "(" and i > 0 and tokens[i - 1].kind == "ident":
            return None  # another side effect, or a call that may have one
        kept.append(tok.text)
    if not increments:
        return None
    return normalize(" ".join(kept)), " ".join(increments), tuple(variables)


def _classify_call(tokens: list[Token], text: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    if tokens[0].kind != "ident":
        return None
    name = tokens[0].text
    if name not in vocab.names():
        return None
    macro = vocab.macros.get(name)
    if macro is not None and not macro.params and len(tokens) == 1:
        return _expanded(macro, [], vocab, depth)  # object-like: LOCK_STATS;
    if len(tokens) < 3 or tokens[1].text != "(" or matching_bracket(tokens, 1) != len(tokens) - 1:
        return None
    args = split_args(text[tokens[1].end : tokens[-1].start])
    if name in PTHREAD_OPS:
        if len(args) != PTHREAD_ARITY.get(name, 1):
            return None
        if depth == 0 and PTHREAD_OPS[name] == "unlock" and (effect := _postfix_effects(args[0])) is not None:
            key, increments, variables = effect
            return LockOp("unlock", key, key, result=increments, effect_vars=variables)
        return LockOp(PTHREAD_OPS[name], args[0], normalize(args[0]))
    if macro is not None:
        return _expanded(macro, args, vocab, depth)
    wrapper = vocab.wrappers[name]
    expr = substitute(wrapper.identity or wrapper.expr, wrapper.params, args)
    if expr is None:
        return None
    expr = _member_through_address(expr)  # take(&a->lk): `&((&a->lk))->m` is `&a->lk.m`
    call = f"{wrapper.accessor}({', '.join(args)})"
    work = f"{wrapper.work_function}({', '.join(args)});" if wrapper.work else ""
    return LockOp(wrapper.kind, call, normalize(expr), via=name, wrapper=wrapper, wrapper_expr=expr, work=work)


def _member_through_address(expr: str) -> str:
    """expr with each `(&E)->` written `(E).`: a wrapper's `&l->m` given `&stats` names `stats.m`,
    which the lock table knows."""
    while True:
        tokens = tokenize(expr)
        for i, tok in enumerate(tokens):
            close = matching_bracket(tokens, i) if tok.text == "(" else -1
            if close < 0 or close + 1 >= len(tokens) or tokens[close + 1].text != "->":
                continue
            inner = _unwrapped(expr[tokens[i + 1].start : tokens[close].start] if close > i + 1 else "")
            if inner.startswith("&") and not inner.startswith("&&"):
                expr = expr[: tok.start] + "(" + inner[1:] + ")." + expr[tokens[close + 1].end :]
                break
        else:
            return expr


def _expanded(macro: Macro, args: list[str], vocab: Vocabulary, depth: int) -> LockOp | None:
    if macro.params:
        body = substitute(macro.body, macro.params, args)
    elif args:  # an object-like alias called (`#define my_lock pthread_mutex_lock`): its body, then the call's
        body = f"{macro.body}({', '.join(args)})"
    else:
        body = macro.body
    if body is None:
        return None
    op = classify(body, vocab, depth + 1)
    if op is None:
        return None
    return replace(op, mutex=pretty(op.mutex), via=macro.name, conditions=_joined(macro.conditions, op.conditions))


def _joined(*lists: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(line for lines in lists for line in lines))


def _classify_checked(tokens: list[Token], text: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    """if (FAILED) FAILURE;  (no else) where FAILED is true exactly when the lock call failed:
    `CALL`, `CALL != 0`, `(v = CALL) != 0`, `!(CALL == 0)`, and any such through expression
    macros and negations: libmicrohttpd's `if (! MHD_mutex_lock_ (m))` with
    `#define MHD_mutex_lock_(m) (! (pthread_mutex_lock ((m))))`.

    The failure branch is dropped: a section the runtime cannot lock aborts with a message, so
    that branch could only run on a broken mutex.  Success tests (`== 0`, `!CALL`) are regions of
    their own, not checks, and are not accepted here."""
    close = matching_bracket(tokens, 1)
    if close < 0 or close == len(tokens) - 1 or any(t.text == "else" for t in tokens[close + 1 :]):
        return None
    if len(top_level_split(text[tokens[close + 1].start : tokens[-1].end], ";")) > 1:
        return None  # more statements after the failure branch (a block's `if (..) abort(); x++; ...`)
    found = _failure_test(text[tokens[2].start : tokens[close - 1].end], vocab, depth + 1) if close > 2 else None
    if found is None or not found[1]:
        return None
    return replace(found[0], checked=True)


def _classify_asserted(test: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    """`assert(CALL == 0)` (libusb's `PTHREAD_CHECK(pthread_mutex_lock(m))` through `ASSERT_EQ`):
    the lock call is made and its failure ends in __assert_fail, which does not return, so the
    failure path is dropped as for `if (FAILED) abort();`.  Only a test true when the call
    succeeded.  Under NDEBUG assert expands to nothing and no lock call is left: libclang's
    statement then holds no call and is never read as a lock statement (may_be_lock)."""
    found = _failure_test(test, vocab, depth + 1)
    if found is None or found[1]:
        return None
    return replace(found[0], checked=True)


def _classify_or_die(text: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    """`FAILED && (abort(), 0)`, `SUCCEEDED || die()`: a lock call whose failure runs only a call
    that does not return (lbzip2's `#define xlock(m) ((void)(pthread_mutex_lock(m) && (abort(), 0)))`);
    the failure path is dropped as for `if (FAILED) abort();`."""
    for operator, when_failed in (("&&", True), ("||", False)):
        parts = top_level_split(text, operator)
        if len(parts) != 2:
            continue
        found = _failure_test(parts[0], vocab, depth + 1)
        if found is not None and found[1] == when_failed and _dies(parts[1]):
            return replace(found[0], checked=True)
    return None


# Calls that do not return: a failure path made of one ends there.
NO_RETURN = {"exit", "_exit", "_Exit", "abort", "quick_exit", "pthread_exit", "err", "errx", "verr",
             "verrx", "longjmp", "siglongjmp", "__assert_fail", "__builtin_trap", "__builtin_unreachable"}


def _dies(expr: str) -> bool:
    """Does expr (a comma expression, parenthesised or not) call a function that does not return?"""
    tokens = tokenize(expr)
    while len(tokens) > 2 and tokens[0].text == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        expr = expr[tokens[1].start : tokens[-1].start]
        tokens = tokenize(expr)
    for part in top_level_split(expr, ","):
        tokens = tokenize(part)
        if len(tokens) >= 3 and tokens[0].text in NO_RETURN and tokens[1].text == "(" \
                and matching_bracket(tokens, 1) == len(tokens) - 1:
            return True
    return False


def _failure_test(text: str, vocab: Vocabulary, depth: int) -> tuple[LockOp, bool] | None:
    """(the lock operation in an if-condition, whether the condition is true when it FAILED),
    following `!`, `!= 0`, `== 0`, parentheses and expression macros (only these count towards the
    expansion depth); None for anything else."""
    tokens = tokenize(text)
    if not tokens or depth > _MAX_EXPANSION_DEPTH:
        return None
    if tokens[0].text == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        return _failure_test(text[tokens[1].start : tokens[-2].end], vocab, depth) if len(tokens) > 2 else None
    if tokens[0].text == "!":
        inner = _failure_test(text[tokens[1].start :], vocab, depth) if len(tokens) > 1 else None
        return (inner[0], not inner[1]) if inner else None
    # `CALL != 0`, `CALL == (0)` (a macro's parameter substituted in parentheses)
    zero = len(tokens) - 1 if tokens[-1].text == "0" else len(tokens) - 3 \
        if len(tokens) > 4 and [t.text for t in tokens[-3:]] == ["(", "0", ")"] else -1
    if zero > 1 and tokens[zero - 1].text in ("!=", "=="):
        inner = _failure_test(text[: tokens[zero - 1].start], vocab, depth)
        return (inner[0], inner[1] == (tokens[zero - 1].text == "!=")) if inner else None
    macro = vocab.macros.get(tokens[0].text)
    if macro is not None and macro.params and len(tokens) > 2 and tokens[1].text == "(" \
            and matching_bracket(tokens, 1) == len(tokens) - 1:
        body = substitute(macro.body, macro.params, split_args(text[tokens[1].end : tokens[-1].start]))
        inner = _failure_test(body, vocab, depth + 1) if body is not None else None
        if inner is not None:
            return replace(inner[0], mutex=_unwrapped(pretty(inner[0].mutex)), via=macro.name,
                           conditions=_joined(macro.conditions, inner[0].conditions)), inner[1]
    op = classify(text, vocab, depth)
    if op is None or op.kind in ("trylock", "timedlock"):
        return None
    return op, True  # the call's value (or `v = CALL`'s): nonzero when it failed


def _unwrapped(expr: str) -> str:
    """expr without the parentheses around all of it: `((&m))` -> `&m`."""
    while expr.startswith("(") and expr.endswith(")"):
        tokens = tokenize(expr)
        if matching_bracket(tokens, 0) != len(tokens) - 1:
            break
        expr = expr[1:-1].strip()
    return expr


def _classify_assigned(tokens: list[Token], text: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    """v = CALL;  TYPE v = CALL;  — the variable then holds 0 (success) in the caller."""
    eq = next((i for i, t in enumerate(tokens) if t.text == "="), -1)
    if eq < 1 or tokens[eq - 1].kind != "ident" or not all(t.kind == "ident" or t.text == "*" for t in tokens[:eq]):
        return None
    op = classify(text[tokens[eq + 1].start : tokens[-1].end], vocab, depth + 1) if eq + 1 < len(tokens) else None
    if op is None or op.kind in ("trylock", "timedlock"):
        return None
    result = text[tokens[0].start : tokens[eq].start].strip() + " = 0;"
    return replace(op, checked=True, result=result)


def checks_result(text: str, op: LockOp) -> bool:
    """`err = lock(&m); if (err) ...;`: is text (the statement after op's) a test, with no else, of
    the variable op's result went to, true only when the call failed (`if (err)`, `if (err != 0)`,
    `if (__builtin_expect(err, 0))`)?  The runtime aborts when it cannot lock: that test's branch
    never runs."""
    if not op.result:
        return False
    var = op.result.split("=")[0].split()[-1].lstrip("*")
    tokens = tokenize(text)
    if len(tokens) < 4 or tokens[0].text != "if" or tokens[1].text != "(":
        return False
    close = matching_bracket(tokens, 1)
    if close < 0 or close == len(tokens) - 1 or any(t.text == "else" for t in tokens[close + 1 :]):
        return False
    return _tests_nonzero(text[tokens[2].start : tokens[close].start], var)


def _tests_nonzero(cond: str, var: str) -> bool:
    """Is cond `var` (true exactly when it is nonzero), through `!= 0`, `!!`, parentheses and
    __builtin_expect(_, 0)?"""
    tokens = tokenize(cond)
    texts = [t.text for t in tokens]
    if texts == [var]:
        return True
    if not tokens:
        return False
    if texts[0] == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        return _tests_nonzero(cond[tokens[1].start : tokens[-1].start], var)
    if texts[:2] == ["!", "!"]:
        return _tests_nonzero(cond[tokens[2].start :], var)
    if texts[-2:] == ["!=", "0"]:
        return _tests_nonzero(cond[: tokens[-2].start], var)
    if texts[:2] == ["0", "!="]:
        return _tests_nonzero(cond[tokens[2].start :], var)
    if texts[:2] == ["__builtin_expect", "("] and matching_bracket(tokens, 1) == len(tokens) - 1:
        args = split_args(cond[tokens[1].end : tokens[-1].start])
        return len(args) == 2 and args[1].strip() == "0" and _tests_nonzero(args[0], var)
    return False


# -- scoped lock statements: a lock held for a block ----------------------------------------------


def _invocation_body(macro: Macro, tokens: list[Token], text: str) -> str | None:
    """The body of `macro` as invoked by the whole of text (tokens: its tokens), arguments
    substituted; None when text is not exactly one invocation of it."""
    if not macro.params:
        return macro.body if len(tokens) == 1 else None
    if len(tokens) < 3 or tokens[1].text != "(" or matching_bracket(tokens, 1) != len(tokens) - 1:
        return None
    return substitute(macro.body, macro.params, split_args(text[tokens[1].end : tokens[-1].start]))


def scoped_lock(header: str, vocab: Vocabulary, depth: int = 0) -> LockOp | None:
    """The lock a scoped lock statement holds while its body runs, once (scoped_lock_shape)."""
    shape = scoped_lock_shape(header, vocab, depth)
    return shape[0] if shape is not None else None


def scoped_lock_shape(header: str, vocab: Vocabulary, depth: int = 0) -> tuple[LockOp, bool] | None:
    """(the lock, whether the body is in a run-once inner `for`) of a scoped lock statement: header
    is the text before the body, a `for (INIT; COND; STEP)` as written or as a macro invocation
    expands it, in one of two forms:
        #define WITH_LOCK(m) for (int i_ = (pthread_mutex_lock(&(m)), 0); !i_; pthread_mutex_unlock(&(m)), i_ = 1)
    INIT takes one lock, STEP releases it and nothing else, COND tests a flag that INIT makes true
    and STEP false (`!f` after `f = 0` / `f = 1`, `f` after `f = 1` / `f = 0`, `f++`...);
        for (unsigned i_ = 0; i_ ? (pthread_mutex_unlock(&(m)), 0) : (pthread_mutex_lock(&(m)), 1); i_ = 1)
    (xz's mythread_sync): COND locks and yields true while the flag has INIT's value, unlocks and
    yields false once STEP has changed it.  Either way the body runs exactly once with the lock
    held.  xz's form follows it with `for (unsigned j_ = 0; !j_; j_ = 1)`, a run-once loop whose
    `break` and `continue` end the section as its end does (the second value is True then).
    None for any other header."""
    if depth > _MAX_EXPANSION_DEPTH:
        return None
    tokens = tokenize(header)
    if not tokens:
        return None
    if tokens[0].text != "for":
        macro = vocab.macros.get(tokens[0].text)
        if macro is None:
            return None
        body = _invocation_body(macro, tokens, header)
        shape = scoped_lock_shape(body, vocab, depth + 1) if body is not None else None
        if shape is None:
            return None
        return replace(shape[0], mutex=pretty(shape[0].mutex), via=macro.name,
                       conditions=_joined(macro.conditions, shape[0].conditions)), shape[1]
    if len(tokens) < 4 or tokens[1].text != "(":
        return None
    close = matching_bracket(tokens, 1)
    inner = False
    if close != len(tokens) - 1:  # `for (...) for (...)`: a run-once inner loop, no lock in it
        rest = header[tokens[close].end:]
        if close < 0 or not _run_once_loop(rest, vocab, depth):
            return None
        inner = True
    clauses = top_level_split(header[tokens[1].end : tokens[close].start], ";")
    if len(clauses) != 3:
        return None
    op = _lock_in_first_clause(*clauses, vocab, depth) or _lock_in_condition(*clauses, vocab, depth)
    return (replace(op, checked=False, result=""), inner) if op is not None else None


def _lock_in_first_clause(init: str, cond: str, step: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    taken, released = lock_calls(init, vocab, depth + 1), lock_calls(step, vocab, depth + 1)
    if len(taken) != 1 or taken[0].kind != "lock" or lock_calls(cond, vocab, depth + 1) \
            or len(released) != 1 or released[0].kind != "unlock" or released[0].key != taken[0].key \
            or released[0].work:  # an unlock wrapper's work would run after the section: not read
        return None
    return taken[0] if _runs_once(init, cond, step, vocab) else None


def _lock_in_condition(init: str, cond: str, step: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    """`f ? (UNLOCK, 0) : (LOCK, 1)` with f = INIT's value first, STEP's after (see scoped_lock_shape)."""
    if lock_calls(init, vocab, depth + 1) or lock_calls(step, vocab, depth + 1):
        return None
    test, *branches = top_level_split(cond, "?")
    if len(branches) != 1:
        return None
    arms = top_level_split(branches[0], ":")
    flag = _flag_test(test)
    if len(arms) != 2 or flag is None:
        return None
    name, true_when_zero = flag
    first = _assigned(init, name, vocab)
    then = _stepped(step, name, first) if first is not None else None
    if then is None or (first == 0) == (then == 0):
        return None

    def arm(flag_value: int) -> tuple[LockOp, int | None] | None:
        text = arms[0] if (flag_value == 0) == true_when_zero else arms[1]  # the arm cond takes
        calls = lock_calls(text, vocab, depth + 1)
        tokens = tokenize(text)
        if len(calls) != 1 or len(tokens) < 3 or tokens[0].text != "(" or matching_bracket(tokens, 0) != len(tokens) - 1:
            return None
        parts = top_level_split(text[tokens[1].start : tokens[-1].start], ",")
        return (calls[0], _value(parts[-1], vocab)) if len(parts) == 2 else None

    entered, left = arm(first), arm(then)
    if entered is None or left is None:
        return None
    (lock, lock_value), (unlock, unlock_value) = entered, left
    if lock.kind != "lock" or unlock.kind != "unlock" or lock.key != unlock.key or unlock.work \
            or not lock_value or unlock_value != 0:
        return None
    return lock


def _run_once_loop(text: str, vocab: Vocabulary, depth: int) -> bool:
    """Is text exactly `for (INIT; COND; STEP)` running its body once, with no lock call?"""
    tokens = tokenize(text)
    if len(tokens) < 4 or tokens[0].text != "for" or tokens[1].text != "(" \
            or matching_bracket(tokens, 1) != len(tokens) - 1 or lock_calls(text, vocab, depth + 1):
        return False
    clauses = top_level_split(text[tokens[1].end : tokens[-1].start], ";")
    return len(clauses) == 3 and _runs_once(*clauses, vocab)


def _runs_once(init: str, cond: str, step: str, vocab: Vocabulary) -> bool:
    """Does `for (init; cond; step) body` run body exactly once (a flag init sets, step flips)?"""
    flag = _flag_test(cond)
    if flag is None:
        return False
    name, true_when_zero = flag
    first = _assigned(init, name, vocab)
    if first is None:
        return False
    then = _stepped(step, name, first)
    return then is not None and (first == 0) == true_when_zero and (then == 0) != true_when_zero


def _flag_test(cond: str) -> tuple[str, bool] | None:
    """(flag, whether cond is true when it is 0) for `!f`, `f == 0`, `f`, `f != 0`, `(...)`."""
    tokens = tokenize(cond)
    texts = [t.text for t in tokens]
    if len(tokens) > 2 and texts[0] == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        return _flag_test(cond[tokens[1].start : tokens[-1].start])
    if len(texts) == 1 and tokens[0].kind == "ident":
        return texts[0], False
    if len(texts) == 2 and texts[0] == "!" and tokens[1].kind == "ident":
        return texts[1], True
    if len(texts) == 3 and texts[1] in ("==", "!=") and texts[2] == "0" and tokens[0].kind == "ident":
        return texts[0], texts[1] == "=="
    return None


def _assigned(init: str, name: str, vocab: Vocabulary) -> int | None:
    """The value `[TYPE] name = VALUE` gives name in a for's first clause: an integer literal, the
    last operand of a parenthesised comma expression, or a lock call's result (0: the runtime
    aborts rather than fail)."""
    for part in top_level_split(init, ","):
        tokens = tokenize(part)
        eq = next((i for i, t in enumerate(tokens) if t.text == "="), -1)
        if eq > 0 and tokens[eq - 1].text == name:
            return _value(part[tokens[eq].end :], vocab)
    return None


def _value(expr: str, vocab: Vocabulary) -> int | None:
    tokens = tokenize(expr)
    if len(tokens) == 1 and tokens[0].kind == "number":
        try:
            return int(tokens[0].text.rstrip("uUlL"), 0)
        except ValueError:
            return None
    if len(tokens) > 2 and tokens[0].text == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        return _value(top_level_split(expr[tokens[1].start : tokens[-1].start], ",")[-1], vocab)
    op = classify(expr, vocab)
    return 0 if op is not None and op.kind == "lock" else None


def _stepped(step: str, name: str, before: int) -> int | None:
    """name's value after a for's third clause, from `name = LITERAL`, `name++`, `++name`, `name--`..."""
    value = None
    for part in top_level_split(step, ","):
        texts = [t.text for t in tokenize(part)]
        if texts in ([name, "++"], ["++", name]):
            value = (before if value is None else value) + 1
        elif texts in ([name, "--"], ["--", name]):
            value = (before if value is None else value) - 1
        elif len(texts) == 3 and texts[:2] == [name, "="]:
            try:
                value = int(texts[2].rstrip("uUlL"), 0)
            except ValueError:
                return None
        elif name in texts:
            return None
    return value


@dataclass(frozen=True)
class Guard:
    """A lock guard: a variable whose initializer locks and whose cleanup function unlocks."""

    op: LockOp  # the lock its initializer takes
    variable: str
    release: LockOp  # the cleanup function's unlock, called with the variable's address


def guard_lock(text: str, vocab: Vocabulary, depth: int = 0) -> Guard | None:
    """A declaration statement (as written, or through the macro it invokes) declaring one
    `__attribute__((cleanup(F)))` variable initialised by a lock that yields the mutex, where F
    unlocks what the variable points to:
        #define GUARD(m) pthread_mutex_t *g_ __attribute__((cleanup(guard_unlock))) = guard_lock(&(m))
    with guard_lock a wrapper returning the mutex it locked (`pthread_mutex_lock(m); return m;`)
    or `(pthread_mutex_lock(&m), &m)`, and guard_unlock an unlock wrapper on `*p`.  The lock is
    held from the declaration to the end of the variable's block, whichever way the block is left."""
    tokens = _statement_tokens(text, depth)
    if not tokens:
        return None
    macro = vocab.macros.get(tokens[0].text)
    if macro is not None:
        body = _invocation_body(macro, tokens, text)
        guard = guard_lock(body, vocab, depth + 1) if body is not None else None
        return replace(guard, op=replace(guard.op, mutex=pretty(guard.op.mutex), via=macro.name)) if guard else None
    cleanup, kept = None, []  # the cleanup function; the tokens outside __attribute__((...))
    i = 0
    while i < len(tokens):
        if tokens[i].text in ("__attribute__", "__attribute") and i + 1 < len(tokens) and tokens[i + 1].text == "(":
            close = matching_bracket(tokens, i + 1)
            if close < 0:
                return None
            inner = [t.text for t in tokens[i + 2 : close]]
            if "cleanup" in inner or "__cleanup__" in inner:
                at = inner.index("cleanup") if "cleanup" in inner else inner.index("__cleanup__")
                if inner[at + 1 : at + 2] != ["("] or at + 3 >= len(inner) or inner[at + 3] != ")":
                    return None
                cleanup = inner[at + 2]
            i = close + 1
            continue
        kept.append(tokens[i])
        i += 1
    eq = next((j for j, t in enumerate(kept) if t.text == "="), -1)
    if cleanup is None or eq < 2 or kept[eq - 1].kind != "ident" \
            or not all(t.kind == "ident" or t.text == "*" for t in kept[:eq]):
        return None
    variable = kept[eq - 1].text
    op = _yields_locked_mutex(text[kept[eq].end : kept[-1].end], vocab, depth)
    release = classify(f"{cleanup}(&{variable});", vocab, depth + 1) if cleanup in vocab.wrappers else None
    if op is None or release is None or release.kind != "unlock" \
            or release.key not in (f"*(&{variable})", f"*&{variable}", variable):
        return None
    if op.wrapper is not None:  # the wrapper returns its argument: that is the mutex, no accessor needed
        op = replace(op, mutex=pretty(op.wrapper_expr), wrapper=None, wrapper_expr="")
    return Guard(op, variable, release)


def _yields_locked_mutex(expr: str, vocab: Vocabulary, depth: int) -> LockOp | None:
    """The lock expr takes if its value is the mutex it locked: a wrapper that returns it, or
    `(LOCK CALL, M)` with M that mutex."""
    op = classify(expr, vocab, depth + 1)
    if op is not None:
        return op if op.kind == "lock" and op.wrapper is not None and op.wrapper.returns_mutex else None
    tokens = tokenize(expr)
    if len(tokens) > 2 and tokens[0].text == "(" and matching_bracket(tokens, 0) == len(tokens) - 1:
        parts = top_level_split(expr[tokens[1].start : tokens[-1].start], ",")
        if len(parts) == 2:
            op = classify(parts[0], vocab, depth + 1)
            if op is not None and op.kind == "lock" and normalize(parts[1]) == op.key:
                return op
    return None


# -- inference: the tree's macros and wrappers ---------------------------------------------------


def add_macros(parsed: ParsedFile, root: Path, vocab: Vocabulary) -> None:
    """Lock macros defined in the tree (not system headers), through any chain of macros and
    wrappers (those that name a wrapper found later are kept pending until then)."""
    in_tree: dict[str, bool] = {}  # file name -> under root (thousands of system macros: cache)
    texts: dict[str, bytes] = {}  # file name -> its bytes, for the #if lines around a definition
    for name, cursor in top_level(parsed.tu).macro_definitions:
        if name is None:
            continue
        if name not in in_tree:
            in_tree[name] = Path(name).resolve().is_relative_to(root)
        if not in_tree[name]:
            continue  # a system macro
        where = (name, cursor.extent.start.offset)
        if where in vocab.read:
            continue  # read through another file
        vocab.read.add(where)
        definition = macro_definition(cursor)
        if definition:
            macro, params, body = definition
            if name not in texts:
                try:
                    texts[name] = Path(name).read_bytes()
                except OSError:
                    texts[name] = b""
            conditions = tuple(guards_at(texts[name], cursor.extent.start.offset))
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
        return name, tuple(params), " ".join(t.spelling for t in tokens[body_from:])
    start, end = tokens[body_from].extent.start.offset, tokens[-1].extent.end.offset
    return name, tuple(params), data[start:end].decode("utf-8", errors="surrogateescape").replace("\\\n", "\n")


def add_wrappers(parsed: ParsedFile, root: Path, vocab: Vocabulary) -> None:
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
            real = Path(name).resolve()
            files[name] = (real.read_bytes(), True) if real.is_relative_to(root) else None
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
                views[name] = cparse.view(parsed, name)
            here = views[name]
            shape = wrapper_shape(here, fn, vocab)
            if shape is None:
                continue
            params = [c for c in child_nodes(fn) if c.kind == K.PARM_DECL]
            wrapper = Wrapper(
                name=fn.spelling, kind=shape.op.kind, params=tuple(p.spelling for p in params),
                param_types=tuple(p.type.spelling for p in params), expr=shape.op.mutex,
                file=str(here.path.resolve().relative_to(root)), is_static=fn.storage_class == ci.StorageClass.STATIC,
                start_offset=fn.extent.start.offset, end_offset=fn.extent.end.offset, in_header=in_header,
                work=shape.work, work_line=shape.work_line, returns_mutex=shape.returns_mutex,
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


# work that cannot be copied into a section: it would wait there, share a static with its original,
# name another function, or jump across functions


_NOT_COPIED = {"pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", "static", "__func__",
               "__FUNCTION__", "__PRETTY_FUNCTION__", "setjmp", "_setjmp", "sigsetjmp", "__sigsetjmp", "longjmp",
               "siglongjmp", "_longjmp", "va_start", "va_arg", "va_end", "va_copy", "__builtin_va_start"}


def wrapper_shape(parsed: ParsedFile, fn: ci.Cursor, vocab: Vocabulary) -> WrapperShape | None:
    """What a function's body does, if it is a lock wrapper: one lock or unlock statement on an
    expression of its parameters and file-scope names (`pthread_mutex_lock(&l->m);`,
    `return pthread_mutex_unlock(m);`), and besides it only
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
    for i, stmt in enumerate(statements):
        text = parsed.text(*statement_range(parsed, stmt))
        if stmt.kind == K.RETURN_STMT:
            text = text.strip()[len("return"):]
        op = classify(text, vocab)
        if op is not None:
            ops.append((i, op))
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
    if op.kind == "lock":
        if len(uninitialised) != len(before):
            return None  # work before the lock is not under it
        work = after
    else:
        if after:
            return None  # work after the unlock is not under it
        work = [s for s in before if s not in uninitialised]
    if not work:
        return WrapperShape(op, returns_mutex=returns_mutex)
    text = parsed.text(statement_range(parsed, work[0])[0], statement_range(parsed, work[-1])[1])
    used = identifiers_used(text)
    if any(_jumps_out(s) for s in work) or used & vocab.names() or any(t.text in _NOT_COPIED for t in tokenize(text)):
        return None
    declarations = [parsed.text(*statement_range(parsed, s)).strip() for s in uninitialised
                    if {c.spelling for c in child_nodes(s)} & used]
    return WrapperShape(op, " ".join([*declarations, text]), work[0].extent.start.line)


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
