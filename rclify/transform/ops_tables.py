"""Operations tables: file-scope struct variables whose initialiser stores functions into
function-pointer fields (the MapReduce library's `mr_lock_ops mr_ptmutex_ops = { .acquire =
ptmutex_acquire, ... }`, called as `OPS.acquire(l)` under `#define OPS mr_ptmutex_ops`).

Read with libclang as each locking unit is parsed (read_tables, before the wrappers), into the
Vocabulary's `tables`: the lock vocabulary reads `T.field(args)` as a direct call of the function
in T's initialiser when T is a `const` table defined once in the tree (OpsTable.resolvable): C
allows no other store into a const object, so the initialiser is what every call through its
field calls.  Any other table that holds a lock function (not const, or defined differently in
two places) is not read: its calls are reported as left alone (call_sites.py, "through-pointer").
This is the lighter, earlier form of function_pointers.py's rule (a field of a const table is
its own location), which needs the whole call graph.
"""

import ctypes
from dataclasses import dataclass, field

import clang.cindex as ci

from rclify.ctext import cursor_lists
from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import child_nodes
from rclify.ctext.initializers import fields_initialised
from rclify.ctext.source_tree import SourceTree

K = ci.CursorKind
T = ci.TypeKind
_LOOK_THROUGH = (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CSTYLE_CAST_EXPR)


@dataclass
class OpsTable:
    name: str
    fields: dict[str, str]  # field (a nested one as `outer.inner`) -> the function its initialiser names
    types: dict[str, str]  # field -> that function's type (canonical spelling: `void (void *)`)
    const: bool
    site: str  # file:line of its definition, for the report
    static_in: str = ""  # a static table: the file defining it (libclang's name), where alone its name denotes it
    conflicting: bool = False  # defined again with other functions (two programs, two static tables)
    sites: set[tuple[str, int]] = field(default_factory=set)  # (file, offset) of each definition read

    @property
    def resolvable(self) -> bool:
        """Is a call through one of its fields a direct call of the function in its initialiser?"""
        return self.const and not self.conflicting

    def holds_any(self, names: set[str]) -> bool:
        return any(f in names for f in self.fields.values())


def read_tables(parsed: ParsedFile, tree: SourceTree, tables: dict[str, OpsTable]) -> None:
    """The unit's file-scope struct variable definitions in the tree's files that store a function
    into a field, added to tables (by name: a second definition with other functions makes the
    name conflicting)."""
    listing = cursor_lists.top_level(parsed.tu, [K.VAR_DECL], definitions_of=K.VAR_DECL)
    names: dict[int, str | None] = {}
    for i, (_, handle, start, *_rest) in enumerate(listing.rows):
        if handle not in names:
            names[handle] = ci.File(ctypes.cast(handle, ci.c_object_p)).name if handle else None
        rel = tree.under(names[handle]) if names[handle] else None
        if rel is None:
            continue  # a system header's
        var = listing.cursor(i)
        if (rel, start) in tables.get(var.spelling, OpsTable("", {}, {}, False, "")).sites:
            continue  # a header's table, read through another unit
        init = [c for c in child_nodes(var) if c.kind == K.INIT_LIST_EXPR]
        record = _record_type(var.type)
        if not init or record is None:
            continue
        stored = _stored_functions(record, init[-1], "")
        if not stored:
            continue
        fields = {path: function for path, (function, _) in stored.items()}
        static = names[handle] if var.storage_class == ci.StorageClass.STATIC else ""
        table = OpsTable(var.spelling, fields, {path: t for path, (_, t) in stored.items()},
                         record.is_const_qualified(), f"{rel}:{var.location.line}", static_in=static,
                         sites={(rel, start)})
        known = tables.get(var.spelling)
        if known is None:
            tables[var.spelling] = table
        else:
            known.sites |= table.sites
            if (known.fields, known.const, known.static_in) != (table.fields, table.const, table.static_in):
                known.conflicting = True


def _record_type(t: ci.Type) -> ci.Type | None:
    t = t.get_canonical()
    return t if t.kind == T.RECORD else None


def _stored_functions(t: ci.Type, init: ci.Cursor, prefix: str) -> dict[str, tuple[str, str]]:
    """field -> (function, its type) of an initialiser list of struct type t (designated or positional;
    a nested struct's fields as `outer.inner`)."""
    out: dict[str, tuple[str, str]] = {}
    for target, value in fields_initialised(t, init):
        name = prefix + target.spelling
        if value.kind == K.INIT_LIST_EXPR:
            nested = _record_type(target.type)
            if nested is not None:
                out |= _stored_functions(nested, value, name + ".")
            continue
        function = _function_named(value)
        if function is not None:
            out[name] = function
    return out


def _function_named(expr: ci.Cursor) -> tuple[str, str] | None:
    """The function an initialiser names (`f`, `&f`, `(T)f`) and its type, or None."""
    while expr.kind in _LOOK_THROUGH or (expr.kind == K.UNARY_OPERATOR and len(child_nodes(expr)) == 1):
        kids = [k for k in child_nodes(expr) if k.kind.is_expression()]
        if len(kids) != 1:
            return None
        expr = kids[0]
    target = expr.referenced if expr.kind == K.DECL_REF_EXPR else None
    if target is None or target.kind != K.FUNCTION_DECL:
        return None
    return target.spelling, target.type.get_canonical().spelling
