"""Planning an extraction: what the section takes from its caller (captures), and what it leaves to it.

Decisions only, no C text generated here (render.py writes it): for a region,
  - captures(): the caller's locals the section uses, by value when they are scalars the section
    only reads, by reference otherwise (writes, address taken, arrays, structs, macro arguments);
    refused when a macro expanded in the region names a local the section's text cannot reach;
  - spelled_captures(): those a macro stringizes or pastes, reached through a #define of their
    name instead of renamed (macro_arguments.py);
  - check_unlock_effects(): whether an unlock's side effect (`unlock(&slots[i++].m)`) may run in
    the caller, after the section.
The plan's other decisions have modules of their own: hoisting.py (hoists(): variables declared
in the region and used after it, declared before the call and assigned in the section) and
placement.py (runs_on_caller_thread(): whether the section may use thread-local state
(rcl_execute_local), and why; lock_config.h's per-section overrides (SectionOverride) have the
last word).  function_locals.py's Declarations are the locals they look names up in.
A region that cannot be planned raises Refusal with its Reason.
"""

from dataclasses import dataclass, field

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import offsets, preorder
from rclify.ctext.declarator import declarator
from rclify.ctext.preprocessor import guards_at, other_branches
from rclify.ctext.tokens import identifiers_used, tokenize
from rclify.transform import macro_arguments
from rclify.transform.function_locals import Declarations, FunctionDecls
from rclify.transform.hoisting import without_top_const
from rclify.transform.refusals import Reason, Refusal
from rclify.transform.regions import Region

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


def spelled_captures(parsed: ParsedFile, region: Region, captures: list[Capture], body: str) -> list[tuple[str, str]]:
    """The captures a macro of the section stringizes or pastes (`print(lu4)` for `#define
    print(x) print_(#x, &x)`: renamed, it would print another name), each as the (name, #define
    line) that the section's function defines around it instead of renaming it: the macro's `#x`
    spells the argument as written, and every other use of the name expands to the capture's.
    Refused (Reason.MACRO_SPELLS_LOCAL) where the macro passes it on to another macro that
    spells it (`#define SHOW(x) SHOW_(x, 1)`: the argument is expanded before SHOW_ sees it), or
    where the name is also a member or a label in the section (`s->lu4`, `.lu4 =`), which such a
    definition would reach too."""
    spelled, passed_on = macro_arguments.spelled(parsed, region, {c.name for c in captures})
    if passed_on:
        raise Refusal(Reason.MACRO_SPELLS_LOCAL)
    if not spelled:
        return []
    tokens = tokenize(body)
    for i, tok in enumerate(tokens):
        if tok.text in spelled and tok.kind == "ident":
            before = tokens[i - 1].text if i else ""
            after = tokens[i + 1].text if i + 1 < len(tokens) else ""
            if before in (".", "->") or after == ":" and before in (";", "{", "}", ""):
                raise Refusal(Reason.MACRO_SPELLS_LOCAL)
    return [(c.name, f"#define {c.name} ({c.use})") for c in captures if c.name in spelled]


def _may_change_unnamed(var: ci.Cursor, decls: FunctionDecls) -> bool:
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
        at = offsets(node)[0]
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
    spelling = without_top_const(typ) if hoisted else typ.spelling  # declared so by Hoist.of
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


_ASM = {"asm", "__asm__", "__asm"}


def _only_read(name: str, body: str) -> bool:
    tokens = tokenize(body)
    in_asm_operands = _asm_operand_tokens(tokens)
    for i, tok in enumerate(tokens):
        if tok.text != name or tok.kind != "ident":
            continue
        if i in in_asm_operands:
            return False  # an asm operand: an output is a write the text does not show
        before = tokens[i - 1].text if i > 0 else ""
        after = tokens[i + 1].text if i + 1 < len(tokens) else ""
        if before in (".", "->"):
            continue
        if after in _ASSIGN or before in ("&", "++", "--") or after in ("[", "."):
            return False
    return True


def _asm_operand_tokens(tokens) -> set[int]:
    """The indexes of the tokens in the operand lists of inline asm statements (after the
    template's first `:`, up to the statement's closing parenthesis)."""
    found: set[int] = set()
    i = 0
    while i < len(tokens):
        if tokens[i].text in _ASM:
            j = i + 1
            while j < len(tokens) and tokens[j].text in ("volatile", "__volatile__", "goto", "inline"):
                j += 1
            if j < len(tokens) and tokens[j].text == "(":
                depth, operands = 0, False
                for k in range(j, len(tokens)):
                    text = tokens[k].text
                    depth += text == "("
                    depth -= text == ")"
                    if depth == 0:
                        break
                    operands = operands or (text == ":" and depth == 1)
                    if operands:
                        found.add(k)
                i = k
        i += 1
    return found


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
