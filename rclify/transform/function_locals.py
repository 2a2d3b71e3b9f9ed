"""The local variables and parameters of a function, by name, with their scopes: what the
planning of a section (plan.py's captures, hoisting.py's hoists) looks a name up in."""

import clang.cindex as ci

from rclify.ctext.cursors import child_nodes
from rclify.transform import aliasing

K = ci.CursorKind


class Declarations:
    """Local variables and parameters of functions, by name, with their scopes."""

    def __init__(self):
        self._cache: dict[int, "FunctionDecls"] = {}

    def of(self, function: ci.Cursor) -> "FunctionDecls":
        key = function.extent.start.offset
        if key not in self._cache:
            self._cache[key] = FunctionDecls(function)
        return self._cache[key]


class FunctionDecls(dict):
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
