"""Which locals of a function may be reached other than by their name: their address is taken.

A section runs in another function (and, under RCL, on another thread), so what it does with the
caller's locals is decided here from the function's whole AST (libclang, macros expanded), not
from the section's text (docs/transform.md, "Extraction"):
  - a local whose address is never taken anywhere in the function can only be read or written
    by its name: a copy taken at the call site is as good as the variable;
  - one whose address is taken (`&x`, `&x.f`, `&x[i]`, an array or an array member decaying to a
    pointer) may be written through that pointer, by a function the section calls or by another
    thread, while the section runs: it must be reached through its address;
  - one declared in the region whose address is taken may be used through that address after
    the section (`p = buf;` ... unlock; `puts(p)`): its storage must outlive the section;
  - so may a compound literal whose address is taken (`keep = &(struct rec){ ... }`, or an array
    literal decaying to a pointer): addressed_literals() says which (lifetimes.py).
"""

import clang.cindex as ci

from rclify.ctext.cursors import child_nodes

K = ci.CursorKind
T = ci.TypeKind
_ARRAYS = (T.CONSTANTARRAY, T.INCOMPLETEARRAY, T.VARIABLEARRAY, T.DEPENDENTSIZEDARRAY)
_TRANSPARENT = (K.PAREN_EXPR, K.UNEXPOSED_EXPR)
# sizeof, _Alignof, __builtin_offsetof: their operand is not evaluated
_UNEVALUATED = (K.CXX_UNARY_EXPR,)


def address_taken(function: ci.Cursor) -> set[int]:
    """The hashes of the function's local variables and parameters whose address may be taken
    anywhere in it (a cursor's .hash, as function_locals.Declarations keys them)."""
    return {root.referenced.hash for root in _addressed(function) if root.kind == K.DECL_REF_EXPR}


def addressed_literals(node: ci.Cursor) -> set[int]:
    """The start offsets of the compound literals under node whose address may be taken: `&(T){..}`,
    `&(T){..}.f`, an array literal or an array member of one used as a value (it decays)."""
    return {root.extent.start.offset for root in _addressed(node) if root.kind == K.COMPOUND_LITERAL_EXPR}


def _addressed(top: ci.Cursor) -> list[ci.Cursor]:
    """The roots (a DECL_REF_EXPR of a local or parameter, a COMPOUND_LITERAL_EXPR) of the
    lvalues under top whose address is taken."""
    roots: list[ci.Cursor] = []

    def visit(node: ci.Cursor, subscripted: bool) -> None:
        if node.kind in _UNEVALUATED:
            return
        children = child_nodes(node)
        if node.kind == K.UNARY_OPERATOR and children and _is_address_of(node, children[0]):
            _mark(children[0], roots)
        elif node.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR, K.COMPOUND_LITERAL_EXPR) and not subscripted \
                and node.type.get_canonical().kind in _ARRAYS and not _array_parameter(node):
            _mark(node, roots)  # an array used as a value decays to a pointer to it
        for i, child in enumerate(children):
            # `a[i]` reads or writes an element: the array's address goes nowhere
            visit(child, node.kind == K.ARRAY_SUBSCRIPT_EXPR and i == 0
                  or subscripted and node.kind in _TRANSPARENT)

    visit(top, False)
    return roots


def _is_address_of(node: ci.Cursor, operand: ci.Cursor) -> bool:
    """Is this unary operator `&`?  Told by types, which macros do not hide: `&e` is a pointer to
    e's type; `*`, `-`, `!`, `~`, `++`, `--` never give one (`p++` is p's own type)."""
    result = node.type.get_canonical()
    return result.kind == T.POINTER and result.get_pointee() == operand.type.get_canonical() \
        and result != operand.type.get_canonical()


def _mark(expr: ci.Cursor, roots: list[ci.Cursor]) -> None:
    """The object at the root of an lvalue: x in `x`, `(x)`, `x.f.g`, `x[i]` (x an array), the
    literal in `(T){..}.f`; nothing for `p->f` or `p[i]` (p a pointer: what it points to is not a
    local of ours)."""
    node = expr
    while True:
        if node.kind in _TRANSPARENT or node.kind == K.CSTYLE_CAST_EXPR:
            children = child_nodes(node)
            if not children:
                return
            node = children[-1]
        elif node.kind == K.MEMBER_REF_EXPR:
            children = child_nodes(node)
            if not children or children[0].type.get_canonical().kind == T.POINTER:
                return  # p->f
            node = children[0]
        elif node.kind == K.ARRAY_SUBSCRIPT_EXPR:
            base = _strip(child_nodes(node)[0])
            if base.type.get_canonical().kind not in _ARRAYS:
                return  # p[i]
            node = base
        elif node.kind == K.DECL_REF_EXPR:
            target = node.referenced
            if target is not None and target.kind in (K.VAR_DECL, K.PARM_DECL):
                roots.append(node)
            return
        elif node.kind == K.COMPOUND_LITERAL_EXPR:
            roots.append(node)
            return
        else:
            return


def _array_parameter(node: ci.Cursor) -> bool:
    """A parameter declared as an array (`int v[4]`) is a pointer: using it takes no address."""
    return node.kind == K.DECL_REF_EXPR and node.referenced is not None and node.referenced.kind == K.PARM_DECL


def _strip(node: ci.Cursor) -> ci.Cursor:
    """Through parentheses and the implicit conversions libclang shows as unexposed."""
    while node.kind in _TRANSPARENT:
        children = child_nodes(node)
        if not children:
            break
        node = children[-1]
    return node
