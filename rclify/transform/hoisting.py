"""Hoisting: variables declared in a region that must outlive its section.

hoists() says which: declared in the region and used after it (in the rest of its block, in an
exit's tail), live across a window (live_across_windows()), or with their address taken while
their block goes on after the section.  Each becomes a Hoist: declared before the call, assigned
in the section.  Decisions only (render.py writes the text); a declaration that cannot be split so
raises Refusal with its Reason.
"""

import re
from dataclasses import dataclass

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import child_nodes, preorder
from rclify.ctext.declarator import declarator
from rclify.ctext.tokens import identifiers_used, top_level_split
from rclify.transform import lifetimes
from rclify.transform.function_locals import Declarations, FunctionDecls
from rclify.transform.refusals import Reason, Refusal
from rclify.transform.regions import Region

K = ci.CursorKind
T = ci.TypeKind


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
        start, end = stmt.extent.start.offset, stmt.extent.end.offset
        if variables and all(v.storage_class == ci.StorageClass.STATIC for v in variables):
            # static storage, initialised once before the program runs: the declaration moves
            # whole, as written, and the section has nothing to assign
            return Hoist(start, end, parsed.text(start, end).strip(), ";", variables)
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
            # its attributes kept: a cleanup runs where its block ends, an alignment holds
            declaration = " ".join(lifetimes.attributes(parsed, var) + [declarator(without_top_const(typ), var.spelling)])
            declarations.append(declaration + ";")
            if init:
                value = parsed.text(init[-1].extent.start.offset, init[-1].extent.end.offset)
                if init[-1].kind == K.INIT_LIST_EXPR:
                    if kind != T.RECORD:
                        raise Refusal(Reason.HOIST_NOT_SIMPLE)
                    # `struct probe pr = { &found, k };` -> `pr = (struct probe){ &found, k };`
                    value = f"({without_top_const(typ)}){value}"
                assignments.append(f"{var.spelling} = {value};")
        return Hoist(start, end, " ".join(declarations), " ".join(assignments) or ";", variables)


def _initializer(parsed: ParsedFile, var: ci.Cursor) -> list[ci.Cursor]:
    """[the initializer] of a variable's declaration, or [] (an array's size is no initializer)."""
    start = var.extent.start.offset
    parts = top_level_split(parsed.text(start, var.extent.end.offset), "=")
    if len(parts) == 1:
        return []
    equals = start + len(parts[0].encode("utf-8", errors="surrogateescape"))
    return [c for c in child_nodes(var)
            if (c.kind.is_expression() or c.kind == K.INIT_LIST_EXPR) and c.extent.start.offset > equals][-1:]


def without_top_const(typ: ci.Type) -> str:
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
                      declared: list[ci.Cursor], decls: FunctionDecls) -> bool:
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


def _cleanup_after_section(parsed: ParsedFile, region: Region, block: ci.Cursor, start: int,
                           declared: list[ci.Cursor]) -> bool:
    """Must a cleanup local declared in the region (at start, in block) be hoisted, so that its
    cleanup runs where its block ends in the caller, after the unlock (lifetimes.py)?  When the
    section may return while it is in scope.  Refused (Reason.CLEANUP_LOCAL) where the hoist
    cannot keep that point: a block nested in the section (the hoist would be declared in the
    home block), or a declaration after a point where the section returns early (the hoisted
    cleanup would run on a variable the section never set)."""
    if not any(lifetimes.has_cleanup(parsed, c) for c in declared):
        return False
    if not (lifetimes.goes_on(region, block) or lifetimes.returns_while_alive(region, block, start)):
        return False  # its block ends in the section, which cannot return before: as before
    hoistable = block == region.home or (region.open_block is not None and block == region.open_block)
    if not hoistable or any(region.lock_end <= at < start for at in lifetimes.early_returns(region)):
        raise Refusal(Reason.CLEANUP_LOCAL)
    return True


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
                    or _outlives_section(parsed, region, block, start, declared, function_decls) \
                    or _cleanup_after_section(parsed, region, block, start, declared):
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
