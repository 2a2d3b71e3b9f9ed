"""Planning an extraction: what the section captures, what it hoists, where it runs.

Decisions only, no C text generated here (render.py writes it): for a region,
  - hoists(): variables declared in the region and used after it, declared before the call and
    assigned in the section;
  - captures(): the caller's locals the section uses, by value when they are scalars the section
    only reads, by reference otherwise (writes, address taken, arrays, structs, macro arguments);
  - runs_on_caller_thread(): whether it may use thread-local state (rcl_execute_local), and why;
    lock_config.h's per-section overrides (SectionOverride) have the last word.
A region that cannot be planned raises Refusal with its Reason.
"""

import re
from dataclasses import dataclass, field

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import child_nodes, preorder
from rclify.ctext.declarator import declarator
from rclify.ctext.preprocessor import guards_at, other_branches
from rclify.ctext.tokens import identifiers_used, tokenize, top_level_split
from rclify.lock_config import SectionOverride
from rclify.transform import aliasing
from rclify.transform.refusals import Reason, Refusal
from rclify.transform.regions import Region
from rclify.transform.thread_state import WAIT_CALLS, ThreadState

K = ci.CursorKind
T = ci.TypeKind
_SCALARS = {T.BOOL, T.CHAR_U, T.UCHAR, T.CHAR16, T.CHAR32, T.USHORT, T.UINT, T.ULONG, T.ULONGLONG,
            T.UINT128, T.CHAR_S, T.SCHAR, T.WCHAR, T.SHORT, T.INT, T.LONG, T.LONGLONG, T.INT128,
            T.FLOAT, T.DOUBLE, T.LONGDOUBLE, T.POINTER, T.ENUM}
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"}


@dataclass
class Capture:
    name: str
    field: str  # declaration in the context struct
    init: str  # its value at the call site
    use: str  # how the section reads it
    guards: list[str] = field(default_factory=list)  # #if lines the declaration sits under


@dataclass
class Hoist:
    """A declaration statement split in two: declarations before the call, assignments inside."""

    start: int
    end: int
    declaration: str  # before the call
    assignment: str  # in the section, in place of the declaration
    variables: list[ci.Cursor]

    @staticmethod
    def of(parsed: ParsedFile, stmt: ci.Cursor, variables: list[ci.Cursor]) -> "Hoist":
        declarations, assignments = [], []
        for var in variables:
            typ = var.type
            kind = typ.get_canonical().kind
            if typ.kind == T.VARIABLEARRAY:
                raise Refusal(Reason.VARIABLE_LENGTH_ARRAY)
            if typ.kind == T.INCOMPLETEARRAY or var.storage_class in (ci.StorageClass.STATIC, ci.StorageClass.EXTERN):
                raise Refusal(Reason.HOIST_NOT_SIMPLE)
            init = _initializer(parsed, var)
            if kind == T.CONSTANTARRAY and init:  # an array cannot be assigned
                raise Refusal(Reason.HOIST_NOT_SIMPLE)
            declaration = declarator(_without_top_const(typ), var.spelling)
            declarations.append(declaration + ";")
            if init:
                value = parsed.text(init[-1].extent.start.offset, init[-1].extent.end.offset)
                if init[-1].kind == K.INIT_LIST_EXPR:
                    if kind != T.RECORD:
                        raise Refusal(Reason.HOIST_NOT_SIMPLE)
                    # `struct probe pr = { &found, k };` -> `pr = (struct probe){ &found, k };`
                    value = f"({_without_top_const(typ)}){value}"
                assignments.append(f"{var.spelling} = {value};")
        return Hoist(stmt.extent.start.offset, stmt.extent.end.offset, " ".join(declarations),
                      " ".join(assignments) or ";", variables)


def _initializer(parsed: ParsedFile, var: ci.Cursor) -> list[ci.Cursor]:
    """[the initializer] of a variable's declaration, or [] (an array's size is no initializer)."""
    start = var.extent.start.offset
    parts = top_level_split(parsed.text(start, var.extent.end.offset), "=")
    if len(parts) == 1:
        return []
    equals = start + len(parts[0].encode("utf-8", errors="surrogateescape"))
    return [c for c in child_nodes(var)
            if (c.kind.is_expression() or c.kind == K.INIT_LIST_EXPR) and c.extent.start.offset > equals][-1:]


def _without_top_const(typ: ci.Type) -> str:
    """A hoisted local's type without its own `const` (zstd's `ZSTD_CCtx* const cctx = ...` under
    the lock): declared before the section and assigned in it, it cannot be const; nothing else
    writes it, as before.  A const that only a typedef carries cannot be taken off: refused."""
    spelling = typ.spelling
    if not typ.is_const_qualified():
        return spelling
    if typ.kind == T.POINTER and re.search(r"\*\s*const\s*$", spelling):
        return re.sub(r"\s*const\s*$", "", spelling)
    if re.match(r"\s*const\s+", spelling) and typ.kind != T.POINTER:
        return re.sub(r"^\s*const\s+", "", spelling)
    raise Refusal(Reason.HOIST_NOT_SIMPLE)


class Declarations:
    """Local variables and parameters of functions, by name, with their scopes."""

    def __init__(self):
        self._cache: dict[int, "_FunctionDecls"] = {}

    def of(self, function: ci.Cursor) -> "_FunctionDecls":
        key = function.extent.start.offset
        if key not in self._cache:
            self._cache[key] = _FunctionDecls(function)
        return self._cache[key]


class _FunctionDecls(dict):
    def __init__(self, function: ci.Cursor):
        super().__init__()
        self.scopes: dict[int, tuple[int, int]] = {}
        self._function = function
        self._address_taken: set[int] | None = None
        fn_extent = (function.extent.start.offset, function.extent.end.offset)

        def visit(node: ci.Cursor, scope: tuple[int, int]) -> None:
            for child in child_nodes(node):
                if child.kind in (K.VAR_DECL, K.PARM_DECL) and child.storage_class != ci.StorageClass.EXTERN:
                    self.setdefault(child.spelling, []).append(child)
                    self.scopes[child.hash] = scope
                inner = scope
                if child.kind in (K.COMPOUND_STMT, K.FOR_STMT):
                    inner = (child.extent.start.offset, child.extent.end.offset)
                visit(child, inner)

        visit(function, fn_extent)

    def address_taken(self, var: ci.Cursor) -> bool:
        """May var's address be taken anywhere in the function (aliasing.py)?"""
        if self._address_taken is None:
            self._address_taken = aliasing.address_taken(self._function)
        return var.hash in self._address_taken

    def visible(self, name: str, at: int) -> ci.Cursor | None:
        best = None
        for cursor in self.get(name, []):
            scope = self.scopes[cursor.hash]
            if cursor.extent.start.offset < at and scope[0] <= at < scope[1]:
                if best is None or self.scopes[best.hash][0] <= scope[0]:
                    best = cursor
        return best




def live_across_windows(region: Region, decls: Declarations) -> list[ci.Cursor]:
    """Locals declared in the region that a window (regions.Window) cuts: the section returns to
    the caller there and a new call resumes it, so they would not survive, nor can the caller's B
    see them.  Live: in scope at the window and named in B, after it in its scope, or anywhere in
    a loop of its scope around the window (the next round)."""
    if not region.windows:
        return []
    declared = decls.of(region.function)
    loops = [n for n in preorder(region.home) if n.kind in (K.FOR_STMT, K.WHILE_STMT, K.DO_STMT)]
    text = region.parsed.text
    live = []
    for name, cursors in declared.items():
        for var in cursors:
            at = var.extent.start.offset
            if not region.lock_end <= at < region.body_end or var.storage_class == ci.StorageClass.STATIC:
                continue
            scope = declared.scopes[var.hash]
            for w in region.windows:
                if not (at < w.unlock_start and scope[0] <= w.unlock_start < scope[1]):
                    continue
                later = [text(*w.released), text(w.relock_end, scope[1])] + [
                    text(loop.extent.start.offset, loop.extent.end.offset) for loop in loops
                    if scope[0] <= loop.extent.start.offset <= w.unlock_start < loop.extent.end.offset]
                if name in identifiers_used(" ".join(later)):
                    live.append(var)
                    break
    return live


def _outlives_section(parsed: ParsedFile, region: Region, block: ci.Cursor, start: int,
                      declared: list[ci.Cursor], decls: "_FunctionDecls") -> bool:
    """Must a variable declared in the region (at start, in block) outlive the section?  When
    its address is taken (aliasing.py) and its block goes on after the section: code after the
    region in the block, an exit's tail or a window in its scope may use it through a pointer
    (`p = buf;` in the section, `puts(p)` after the unlock).  Static storage outlives anything."""
    if not any(decls.address_taken(c) and c.storage_class != ci.StorageClass.STATIC for c in declared):
        return False
    block_end = block.extent.end.offset
    if any(start < e.unlock_start < block_end for e in region.exits) \
            or any(start < w.unlock_start < block_end for w in region.windows):
        return True
    if region.open_block is not None and block == region.open_block:
        return True
    if block != region.home:
        return False
    after = parsed.text(*region.later).strip()
    return bool(after[:-1].strip() if region.later[1] == region.compound.extent.end.offset else after)


def hoists(parsed: ParsedFile, region: Region, decls: Declarations) -> list[Hoist]:
    """Variables declared in the region and used after it: in the rest of the region's block,
    or in the tail of an exit that follows them in their own block; and those live across a
    window (live_across_windows), when no other variable of their name is seen before or after
    the region, which their declaration before the call would hide."""
    across = {v.hash for v in live_across_windows(region, decls)}
    function_decls = decls.of(region.function)
    hoists = []
    home = region.home
    blocks = [home] + [
        n for n in preorder(home)
        if n.kind == K.COMPOUND_STMT and region.lock_end <= n.extent.start.offset < region.body_end
    ]
    for block in blocks:
        for stmt in child_nodes(block):
            start = stmt.extent.start.offset
            if stmt.kind != K.DECL_STMT or not (region.lock_end <= start < region.body_end):
                continue
            later = [parsed.text(e.tail_start, e.tail_end) for e in region.exits
                     if start < e.unlock_start < block.extent.end.offset]
            if block == home:
                later.append(parsed.text(*region.later))
            if region.open_block is not None and block == region.open_block:  # the rest of it runs after
                later.append(parsed.text(region.end, block.extent.end.offset))
            declared = [c for c in child_nodes(stmt) if c.kind == K.VAR_DECL]
            if {c.spelling for c in declared} & identifiers_used(" ".join(later)) \
                    or _outlives_section(parsed, region, block, start, declared, function_decls):
                hoists.append(Hoist.of(parsed, stmt, declared))
                continue
            if not any(c.hash in across for c in declared):
                continue
            after = identifiers_used(parsed.text(*region.later))
            if any(function_decls.visible(c.spelling, region.start) is not None or c.spelling in after
                   for c in declared):
                raise Refusal(Reason.LOCAL_ACROSS_WINDOW)
            hoists.append(Hoist.of(parsed, stmt, declared))
    names = [v.spelling for h in hoists for v in h.variables]
    if len(names) != len(set(names)):  # two of one name, in two blocks of the region
        raise Refusal(Reason.HOIST_NOT_SIMPLE)
    return hoists


def captures(parsed: ParsedFile, decls: Declarations, region: Region, body: str,
             hoisted: dict[str, ci.Cursor], released: str = "") -> list[Capture]:
    """The caller's locals the section's text (body) uses.  released: what the caller runs
    between two runs of a resumable section; a local it writes is captured by reference (the
    section reads what it wrote, never a copy taken before it, maybe uninitialised)."""
    decls = decls.of(region.function)
    inside = {name for name, cursors in decls.items()
              if any(region.lock_end <= c.extent.start.offset < region.body_end for c in cursors)}
    if _macro_bodies_use_locals(parsed, region, inside | set(hoisted)):
        # a macro body names the caller's local (memcached's APPEND_STAT uses `c`): the
        # section's text cannot be rewritten to reach it through the context
        raise Refusal(Reason.MACRO_USES_LOCAL)
    captures = []
    for name in sorted(identifiers_used(body)):
        visible = hoisted.get(name) or (decls.visible(name, region.start) if name in decls else None)
        if visible is None:
            continue  # a global, a function, a type, an enumerator, or declared inside
        if name in inside and name not in hoisted:
            raise Refusal(Reason.SHADOWED_VARIABLE)
        # in a macro's expansion, an inner macro may write what it is given: by reference
        written_elsewhere = not _only_read(name, released) or region.expansion is not None \
            or _may_change_unnamed(visible, decls)
        captures.append(_capture(parsed, region, name, visible, body, hoisted=name in hoisted,
                                 written_elsewhere=written_elsewhere))
    return captures


def _may_change_unnamed(var: ci.Cursor, decls: "_FunctionDecls") -> bool:
    """May var change without its name being written: through a pointer to it (its address is
    taken somewhere in the function, so a callee or another thread may write it while the section
    runs), behind the compiler's back (volatile), or by another thread (a static local, shared by
    every call).  Such a variable is never copied into the context: a copy is taken before the
    lock, the section must read it under the lock."""
    return (decls.address_taken(var) or var.type.is_volatile_qualified()
            or var.storage_class == ci.StorageClass.STATIC)


def check_unlock_effects(region: Region, decls: Declarations) -> None:
    """An unlock that increments a variable in its argument (`unlock(&slots[i++].m)`) has the
    increment run by the caller after the section, once, as before (LockOp.effect_vars): sound when
    nothing but this function's own code can see the variable (a local or parameter, not static,
    not volatile, its address never taken), so that no other thread can tell it ran after the
    unlock.  Else Reason.UNLOCK_SIDE_EFFECT."""
    declared = decls.of(region.function)
    for name in region.unlock_effects:
        var = declared.visible(name, region.start) if name in declared else None
        if var is None or _may_change_unnamed(var, declared):
            raise Refusal(Reason.UNLOCK_SIDE_EFFECT)


@dataclass
class Placement:
    """Where a section runs, and why."""

    local: bool  # on the caller's thread (rcl_execute_local)
    because: str = ""  # what the analysis found thread-bound ("" when nothing)
    override: SectionOverride | None = None  # lock_config.h's decision, which wins
    may_wait: bool = False  # waits on a condvar: never on a combiner (rcl_execute_may_wait)


def runs_on_caller_thread(region: Region, state: ThreadState, section: str,
                          overrides: dict[str, SectionOverride] | None = None) -> Placement:
    """Does the section (named `section`, rclify_cs_<section>) run on its caller's thread?  Yes
    when the analysis cannot show it uses no thread-local state (thread_state.py), unless
    lock_config.h says otherwise for this section."""
    tails = region.unlocked_spans()
    nodes = [n for n in preorder(region.home)
             if region.lock_end <= n.extent.start.offset < region.body_end
             and not any(s <= n.extent.start.offset < e for s, e in tails)]  # tails (and B) run in the caller
    because = state.section_cause(nodes) or ""
    may_wait = state.waits_on_condvar(nodes)
    for wrapper in region.wrappers_used():  # a wrapper's work runs in the section too
        because = because or (state.callee_cause(wrapper.name) or "" if wrapper.work else "")
        may_wait = may_wait or bool(wrapper.work and state.reachable({wrapper.name}) & WAIT_CALLS)
    override = (overrides or {}).get(section)
    if override is not None:
        return Placement(not override.on_server, because, override, may_wait)
    return Placement(bool(because), because, None, may_wait)


def _macro_bodies_use_locals(parsed: ParsedFile, region: Region, declared_inside: set[str]) -> bool:
    """Does a macro expanded in the region refer to a local of the function that is not
    written in the invocation itself (so renaming the text cannot reach it)?"""
    fn = region.function
    fn_start, fn_end = fn.extent.start.offset, fn.extent.end.offset
    fn_file = fn.extent.start.file.name
    data = parsed.data
    # a statement macro's section is its expansion's text: a name written there is reached
    expanded = identifiers_used(" ".join((region.expansion.before, region.expansion.body, region.expansion.after))) \
        if region.expansion is not None else set()
    for node in preorder(region.home):
        at = node.extent.start.offset
        if node.kind != K.DECL_REF_EXPR or not (region.lock_end <= at < region.body_end):
            continue
        target = node.referenced
        if target is None or target.kind not in (K.VAR_DECL, K.PARM_DECL) or target.extent.start.file is None:
            continue
        if target.storage_class == ci.StorageClass.EXTERN or target.extent.start.file.name != fn_file:
            continue
        name = target.spelling
        if not (fn_start <= target.extent.start.offset < fn_end) or name in declared_inside:
            continue
        if data[at : at + len(name)].decode(errors="replace") == name or name in expanded:
            continue  # written right there
        invocation = next(((s, e) for s, e in parsed.macro_uses if s <= at <= e), None)
        if invocation is None or name not in identifiers_used(parsed.text(invocation[0], invocation[1] + 1)):
            return True
    return False


def _capture(parsed: ParsedFile, region: Region, name: str, cursor: ci.Cursor, body: str,
             hoisted: bool = False, written_elsewhere: bool = False) -> Capture:
    typ = cursor.type
    if typ.kind in (T.VARIABLEARRAY, T.DEPENDENTSIZEDARRAY):
        raise Refusal(Reason.VARIABLE_LENGTH_ARRAY)
    if _declared_inside(typ, region.function):
        raise Refusal(Reason.LOCAL_TYPE)
    spelling = _without_top_const(typ) if hoisted else typ.spelling  # declared so by Hoist.of
    if "(anonymous" in spelling or "(unnamed" in spelling:
        raise Refusal(Reason.LOCAL_TYPE)
    kind = typ.get_canonical().kind
    # a parameter declared as an array (`int v[4]`, ag's `va_list args`) is a pointer to its first
    # element: `&args` is `__va_list_tag **`, not `va_list *`
    decayed = cursor.kind == K.PARM_DECL and kind in (T.CONSTANTARRAY, T.INCOMPLETEARRAY)
    # and one declared as a function (fio's `void fn(struct writer_thread *)`) is a pointer to it
    function = cursor.kind == K.PARM_DECL and kind in (T.FUNCTIONPROTO, T.FUNCTIONNOPROTO)
    if decayed or function:
        kind = T.POINTER
    by_value = (kind in _SCALARS and _only_read(name, body) and not written_elsewhere
                and not _in_macro_argument(parsed, name, region))
    # blocks opened before the function also enclose the context struct placed before it
    declared_at, fn_start = cursor.extent.start.offset, region.function.extent.start.offset
    guards = guards_at(parsed.data, declared_at, since=fn_start)
    if guards and _declared_in_another_branch(parsed, name, declared_at, fn_start):
        raise Refusal(Reason.CONDITIONAL_DECLARATION)
    guards = [g for g in guards if g != parsed.guard_line]  # a header's include guard is no condition
    if decayed or function:  # its type, written so that spatch and the declarator syntax leave it alone
        pointer = f"__typeof__({spelling}) *" if function else f"__typeof__(&(*(__typeof__({spelling}) *)0)[0])"
        if by_value:
            return Capture(name, f"{pointer} {name}", name, f"rclify_ctx->{name}", guards)
        return Capture(name, f"{pointer} *{name}", f"&{name}", f"(*rclify_ctx->{name})", guards)
    if by_value:
        return Capture(name, declarator(spelling, name), name, f"rclify_ctx->{name}", guards)
    if typ.kind == T.CONSTANTARRAY:
        # `__typeof__(useconds_t[64]) *x`, not `useconds_t (*x)[64]`: spatch, rewriting the file
        # after extraction, reads the latter as a call when useconds_t is a typedef it has not seen
        field = f"__typeof__({spelling}) *{name}"
        return Capture(name, field, f"&{name}", f"(*rclify_ctx->{name})", guards)
    return Capture(name, declarator(spelling, f"(*{name})"), f"&{name}", f"(*rclify_ctx->{name})", guards)


def _declared_in_another_branch(parsed: ParsedFile, name: str, declared_at: int, fn_start: int) -> bool:
    """Is name also written in another branch of an #if block around its declaration (declared
    there too, maybe with another type, which the analysed configuration does not show)?"""
    return any(name in identifiers_used(parsed.text(a, b))
               for a, b in other_branches(parsed.data, declared_at, since=fn_start))


def _in_macro_argument(parsed: ParsedFile, name: str, region: Region) -> bool:
    """Is name used inside a macro invocation in the region (the macro might assign it)?"""
    for start, end in parsed.macro_uses:
        if region.lock_end <= start and end <= region.body_end:
            if name in identifiers_used(parsed.text(start, end + 1)):
                return True
    return False


def _only_read(name: str, body: str) -> bool:
    tokens = tokenize(body)
    for i, tok in enumerate(tokens):
        if tok.text != name or tok.kind != "ident":
            continue
        before = tokens[i - 1].text if i > 0 else ""
        after = tokens[i + 1].text if i + 1 < len(tokens) else ""
        if before in (".", "->"):
            continue
        if after in _ASSIGN or before in ("&", "++", "--") or after in ("[", "."):
            return False
    return True


def _declared_inside(typ: ci.Type, function: ci.Cursor) -> bool:
    seen = 0
    while typ.kind in (T.POINTER, T.CONSTANTARRAY, T.INCOMPLETEARRAY) and seen < 8:
        typ = typ.get_pointee() if typ.kind == T.POINTER else typ.element_type
        seen += 1
    decl = typ.get_declaration()
    if decl is None or decl.kind == K.NO_DECL_FOUND or decl.extent.start.file is None:
        return False
    fe = function.extent
    return (decl.extent.start.file.name == fe.start.file.name
            and fe.start.offset <= decl.extent.start.offset < fe.end.offset)
