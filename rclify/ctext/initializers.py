"""What an initialiser list stores: the field each of its elements initialises, designated
(`.acquire = f`) or by position, as libclang lists them."""

from collections.abc import Iterator

import clang.cindex as ci

from rclify.ctext.cursors import child_nodes

K = ci.CursorKind
T = ci.TypeKind


def fields_initialised(t: ci.Type, init: ci.Cursor) -> Iterator[tuple[ci.Cursor, ci.Cursor]]:
    """(field, value) for each element of the initialiser list init of struct type t (a nested
    list's value is its own INIT_LIST_EXPR)."""
    fields = list(t.get_canonical().get_fields())
    for i, kid in enumerate(child_nodes(init)):
        designated = child_nodes(kid) if kid.kind == K.UNEXPOSED_EXPR and kid.type.kind == T.VOID else ()
        if designated and designated[0].kind == K.MEMBER_REF:  # libclang's DesignatedInitExpr
            target, value = designated[0].referenced, designated[-1]
        elif i < len(fields):
            target, value = fields[i], kid
        else:
            continue
        if target is not None and target.kind == K.FIELD_DECL:
            yield target, value
