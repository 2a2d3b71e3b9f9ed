"""What a call through a function pointer may call: a points-to set per pointer location.

A location is a variable (global, static or local), a parameter, or a struct field (one set per
field of a struct type, whatever the instance: field-based, as struct copies between instances of
one type keep every value in the same set).  Its set is every function stored into it anywhere in
the parsed units: an initialiser (designated or positional, nested structs and arrays of them), an
assignment, an argument passed to a parameter; a value read from another location adds that
location's set.  NULL adds nothing (a call through it crashes wherever it runs).

A location is unknown, and a call through it stays unknown, when a value stored into it cannot be
followed (a call's result, a cast from data, a location that is not a function pointer), when its
address is taken (stores through the pointer cannot be seen), when it is a parameter of a function
that code outside the tree may call (neither static nor of hidden visibility) or whose address is
taken (called through a pointer: its arguments are not seen), or when nothing in the tree stores into it (code outside
the tree must).  The rule assumes the analysed tree holds every store into its own globals and
struct fields (docs/transform.md, "Where a section runs": what breaks it, and the override).
"""

import ctypes
import re
from dataclasses import dataclass, field
from typing import Callable

import clang.cindex as ci

from rclify.ctext import cursor_lists
from rclify.ctext.cparse import ParsedFile
from rclify.ctext.initializers import fields_initialised
from rclify.ctext.cursors import child_nodes, hidden, offsets, operator, preorder, top_level

K = ci.CursorKind
T = ci.TypeKind
_FUNCTION_TYPES = (T.FUNCTIONPROTO, T.FUNCTIONNOPROTO)
_LOOK_THROUGH = (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CSTYLE_CAST_EXPR)
_LOCATION_DECLS = (K.VAR_DECL, K.FIELD_DECL, K.PARM_DECL)


def _is_function_pointer(t: ci.Type) -> bool:
    t = t.get_canonical()
    while t.kind in (T.CONSTANTARRAY, T.INCOMPLETEARRAY):
        t = t.element_type.get_canonical()
    return t.kind == T.POINTER and t.get_pointee().get_canonical().kind in _FUNCTION_TYPES


@dataclass
class Targets:
    """What a call through one location may call: the functions, or why that is not known."""
    location: str  # as written: yarn_abort, ops->acquire
    functions: frozenset[str] = frozenset()
    unknown: str = ""  # why the set is not known ("" when it is)


@dataclass
class _Location:
    name: str  # for messages
    words: set[str] = field(default_factory=set)  # what a file that stores into it must mention
    functions: set[str] = field(default_factory=set)
    flows_from: set[str] = field(default_factory=set)  # other locations' USRs
    unknown: str = ""
    stored: bool = False


class FunctionPointers:
    """The points-to sets of the parsed units' function-pointer locations."""

    def __init__(self, in_tree: Callable[[str | None], bool], text_of: Callable[[str], bytes]):
        self.in_tree = in_tree  # is this file (libclang's name) one of the tree's?
        self.text_of = text_of  # a tree file's bytes, by libclang's name
        # Functions are walked when first needed: those whose text names a location asked about
        # (its variable, field, struct type, or for a parameter its function).  A store into a
        # location names it, so none is missed; most functions are never walked.
        self._pending: list[tuple[ci.Cursor, bytes]] = []
        self._words_walked: set[str] = set()
        self.locations: dict[str, _Location] = {}
        self.address_taken: set[str] = set()  # functions whose address is taken (USR)
        self._params: dict[str, list[str]] = {}  # function USR -> its parameters' location USRs
        self._param_calls: list[tuple[str, int, ci.Cursor]] = []  # (callee USR, index, argument)
        self._seen: set[tuple[str, int]] = set()
        self._solved: dict[str, tuple[frozenset[str], str]] = {}

    # -- reading the units ----------------------------------------------------------------------
    def add(self, parsed: list[ParsedFile]) -> None:
        for pf in parsed:
            listing = cursor_lists.top_level(pf.tu, [K.VAR_DECL], definitions_of=K.VAR_DECL)
            names: dict[int, str | None] = {}
            for i, (_, handle, *_rest) in enumerate(listing.rows):
                if handle not in names:
                    names[handle] = ci.File(ctypes.cast(handle, ci.c_object_p)).name if handle else None
                if self.in_tree(names[handle]):
                    self._variable(listing.cursor(i))
            for name, fn in top_level(pf.tu).function_definitions:
                key = (fn.get_usr(), offsets(fn)[0])
                if name is None or key in self._seen or not self.in_tree(name):
                    continue
                self._seen.add(key)
                start, end = offsets(fn)
                self._pending.append((fn, self.text_of(name)[start:end]))
        self._solved.clear()
        self._words_walked.clear()  # new units: their functions are pending

    def _walk_mentioning(self, words: set[str]) -> bool:
        """Walks the pending functions whose text names one of words; True when it walked one."""
        words = words - self._words_walked
        if not words:
            return False
        self._words_walked |= words
        pattern = re.compile(rb"\b(?:" + b"|".join(re.escape(w.encode()) for w in sorted(words)) + rb")\b")
        walked = [fn for fn, text in self._pending if pattern.search(text)]
        self._pending = [(fn, text) for fn, text in self._pending if not pattern.search(text)]
        for fn in walked:
            self._function(fn)
        self._flow_parameters()
        return bool(walked)

    def _function(self, fn: ci.Cursor) -> None:
        usr = fn.get_usr()
        params = [c for c in child_nodes(fn) if c.kind == K.PARM_DECL]
        self._params[usr] = [self._declare(p, fn) for p in params]
        if usr in self.address_taken:
            self._mark_parameters(usr)
        if fn.linkage != ci.LinkageKind.INTERNAL and not hidden(fn):
            for p in params:
                if _is_function_pointer(p.type):
                    self._mark(p.get_usr(), f"it is a parameter of {fn.spelling}(), which code outside the tree may call")
        callees: set[int] = set()
        for node in preorder(fn):
            if node.kind == K.CALL_EXPR:
                self._call(node, callees)
            elif node.kind == K.VAR_DECL:
                self._variable(node)
            elif node.kind == K.BINARY_OPERATOR:
                self._assignment(node)
            elif node.kind == K.UNARY_OPERATOR and operator(node) == "&":
                self._address_of(node)
            elif node.kind == K.DECL_REF_EXPR and offsets(node)[0] not in callees:
                target = node.referenced
                if target is not None and target.kind == K.FUNCTION_DECL and target.get_usr() not in self.address_taken:
                    self.address_taken.add(target.get_usr())
                    self._mark_parameters(target.get_usr())

    def _call(self, call: ci.Cursor, callees: set[int]) -> None:
        kids = child_nodes(call)
        if kids:
            callee = _look_through(kids[0])
            if callee.kind == K.DECL_REF_EXPR:
                callees.add(offsets(callee)[0])
        target = call.referenced
        if target is not None and target.kind == K.FUNCTION_DECL:
            for i, arg in enumerate(kids[1:]):
                if _is_function_pointer(arg.type):
                    self._param_calls.append((target.get_usr(), i, arg))

    def _mark_parameters(self, function_usr: str) -> None:
        for p in self._params.get(function_usr, ()):
            self._mark(p, "its function is called through a pointer (its arguments are not followed)")

    def _variable(self, var: ci.Cursor) -> None:
        init = [c for c in child_nodes(var) if c.kind not in (K.PARM_DECL, K.TYPE_REF, K.ANNOTATE_ATTR)
                and c.kind.is_expression()]
        if _is_function_pointer(var.type):
            loc = self._declare(var)
            if init:
                self._store(loc, init[-1])
            elif var.storage_class == ci.StorageClass.EXTERN:
                pass  # a declaration: its definition (if in the tree) stores
            elif var.semantic_parent is not None and var.semantic_parent.kind == K.TRANSLATION_UNIT:
                self.locations[loc].stored = True  # zero-initialised: NULL, nothing to call
        elif init and init[-1].kind == K.INIT_LIST_EXPR:
            self._init_list(var.type, init[-1], var if _constant_table(var) else None)

    def _init_list(self, t: ci.Type, init: ci.Cursor, table: ci.Cursor | None = None) -> None:
        """Stores of an initialiser list into the fields of a struct type, or the elements of an
        array (of function pointers, or of structs).  table: a file-scope const variable being
        initialised, whose fields have sets of their own (nothing else can store into them)."""
        t = t.get_canonical()
        kids = child_nodes(init)
        if t.kind in (T.CONSTANTARRAY, T.INCOMPLETEARRAY):
            element = t.element_type
            for kid in kids:
                if kid.kind == K.INIT_LIST_EXPR:
                    self._init_list(element, kid, table)
            return
        if t.kind != T.RECORD:
            return
        for target, value in fields_initialised(t, init):
            if value.kind == K.INIT_LIST_EXPR:
                self._init_list(target.type, value, table)
            elif _is_function_pointer(target.type):
                self._store(self._declare(target), value)
                if table is not None:
                    self._store(self._declare_table_field(table, target), value)

    def _assignment(self, node: ci.Cursor) -> None:
        kids = child_nodes(node)
        if len(kids) != 2 or not _is_function_pointer(kids[0].type):
            return
        op = operator(node)
        if op != "=":
            return  # ==, !=: the only other operators on function pointers
        loc = self._location_of(kids[0])
        if loc is None:
            return  # a store through a pointer: only into locations whose address was taken
        self._store(loc, kids[1])

    def _address_of(self, node: ci.Cursor) -> None:
        kids = child_nodes(node)
        loc = self._location_of(kids[0]) if kids else None
        if loc is not None:
            self._mark(loc, "its address is taken (what is stored through it is not followed)")

    # -- the locations --------------------------------------------------------------------------
    def _declare(self, decl: ci.Cursor, function: ci.Cursor | None = None) -> str:
        usr = decl.get_usr() or f"{_file(decl)}:{offsets(decl)[0]}"
        if function is None and decl.kind == K.PARM_DECL:
            function = decl.semantic_parent
        if usr not in self.locations:
            name = decl.spelling
            words = {name}
            if decl.kind == K.FIELD_DECL:
                record = decl.semantic_parent
                name = f"{record.spelling or 'struct'}.{decl.spelling}"
                words |= {w for w in (record.spelling, record.type.spelling) if w}
            elif function is not None:
                name = f"{decl.spelling} (a parameter of {function.spelling}())"
                words.add(function.spelling)  # its callers name the function
            self.locations[usr] = _Location(name, words)
            if decl.kind == K.FIELD_DECL and not self.in_tree(_file(decl)):
                self._mark(usr, "its struct is not the tree's")
        return usr

    def _declare_table_field(self, table: ci.Cursor, field_decl: ci.Cursor) -> str:
        usr = f"{table.get_usr()}::{field_decl.get_usr()}"
        if usr not in self.locations:
            self.locations[usr] = _Location(f"{table.spelling}.{field_decl.spelling}", {table.spelling})
        return usr

    def _location_of(self, expr: ci.Cursor) -> str | None:
        """The location an lvalue or value names (a variable, a field, an array of them; a field
        of a const table, that table's own)."""
        expr = _look_through(expr)
        if expr.kind == K.ARRAY_SUBSCRIPT_EXPR:
            kids = child_nodes(expr)
            return self._location_of(kids[0]) if kids else None
        if expr.kind == K.MEMBER_REF_EXPR and expr.referenced is not None:
            base = child_nodes(expr)
            base = _look_through(base[0]) if base else None
            while base is not None and base.kind == K.ARRAY_SUBSCRIPT_EXPR:
                base = _look_through(child_nodes(base)[0]) if child_nodes(base) else None
            table = base.referenced if base is not None and base.kind == K.DECL_REF_EXPR else None
            if table is not None and table.kind == K.VAR_DECL:
                usr = f"{table.get_usr()}::{expr.referenced.get_usr()}"
                if usr in self.locations:
                    return usr
        if expr.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR):
            target = expr.referenced
            if target is not None and target.kind in _LOCATION_DECLS and _is_function_pointer(target.type):
                return self._declare(target)
        return None

    def _store(self, loc: str, value: ci.Cursor) -> None:
        self.locations[loc].stored = True
        for v in _values(value):
            if v.kind == K.INTEGER_LITERAL or (v.kind == K.CSTYLE_CAST_EXPR and not child_nodes(v)):
                continue  # NULL
            if v.kind == K.DECL_REF_EXPR and v.referenced is not None and v.referenced.kind == K.FUNCTION_DECL:
                self.locations[loc].functions.add(v.referenced.spelling)
                continue
            source = self._location_of(v)
            if source is not None:
                self.locations[loc].flows_from.add(source)
            elif v.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR) and v.referenced is not None \
                    and v.referenced.kind == K.PARM_DECL:
                self._mark(loc, f"it is given a parameter rclify does not follow ({v.spelling})")
            else:
                self._mark(loc, "it is given a value rclify does not follow (a call's result, a cast)")

    def _mark(self, loc: str, why: str) -> None:
        if loc in self.locations and not self.locations[loc].unknown:
            self.locations[loc].unknown = why

    # -- the sets -------------------------------------------------------------------------------
    def targets(self, call: ci.Cursor) -> Targets:
        """What a call through a pointer may call."""
        kids = child_nodes(call)
        loc = self._location_of(kids[0]) if kids else None
        shown = kids[0].spelling if kids and kids[0].spelling else "a pointer"
        if loc is None:
            return Targets(shown, unknown="rclify does not follow what it points to")
        functions, why = self._solve(loc)
        return Targets(self.locations[loc].name, functions, why)

    def mentioned_words(self, call: ci.Cursor) -> set[str]:
        kids = child_nodes(call)
        loc = self._location_of(kids[0]) if kids else None
        return set() if loc is None else {w for l in self._closure(loc) for w in self.locations[l].words}

    def _closure(self, loc: str) -> set[str]:
        seen, todo = set(), [loc]
        while todo:
            l = todo.pop()
            if l not in seen and l in self.locations:
                seen.add(l)
                todo.extend(self.locations[l].flows_from)
        return seen

    def _solve(self, loc: str) -> tuple[frozenset[str], str]:
        if loc not in self._solved:
            while self._walk_mentioning({w for l in self._closure(loc) for w in self.locations[l].words}):
                pass
            functions, why = set(), ""
            for l in sorted(self._closure(loc)):
                where = self.locations[l]
                functions |= where.functions
                if not why and where.unknown:
                    why = f"{where.name}: {where.unknown}" if l != loc else where.unknown
                if not why and not where.stored:
                    why = (f"{where.name}: " if l != loc else "") + "nothing in the analysed files stores into it"
            self._solved[loc] = (frozenset(functions), why)
        return self._solved[loc]

    def _flow_parameters(self) -> None:
        """Arguments into the parameters of the tree's functions walked so far."""
        waiting = []
        for call in self._param_calls:
            callee, i, arg = call
            params = self._params.get(callee)
            if params is None:
                waiting.append(call)  # its function is not walked yet
            elif i < len(params) and params[i] in self.locations:
                self._store(params[i], arg)
        self._param_calls = waiting


def _constant_table(var: ci.Cursor) -> bool:
    """A file-scope variable of const struct type (or an array of them): its initialiser is the
    only store into it."""
    t = var.type.get_canonical()
    while t.kind in (T.CONSTANTARRAY, T.INCOMPLETEARRAY):
        t = t.element_type.get_canonical()
    return t.kind == T.RECORD and t.is_const_qualified() and var.semantic_parent is not None \
        and var.semantic_parent.kind == K.TRANSLATION_UNIT


def _values(expr: ci.Cursor) -> list[ci.Cursor]:
    """The expressions a value may come from: through casts and parentheses, both arms of ?:,
    `&f` and `*p`."""
    expr = _look_through(expr)
    kids = child_nodes(expr)
    if expr.kind == K.CONDITIONAL_OPERATOR and len(kids) == 3:
        return _values(kids[1]) + _values(kids[2])
    if expr.kind == K.UNARY_OPERATOR and len(kids) == 1:
        return _values(kids[0])
    return [expr]


def _look_through(expr: ci.Cursor) -> ci.Cursor:
    """Under implicit conversions, parentheses and casts (a cast's first children name its type)."""
    while expr.kind in _LOOK_THROUGH:
        kids = [k for k in child_nodes(expr) if k.kind.is_expression()]
        if len(kids) != 1:
            break
        expr = kids[0]
    return expr


def _file(cursor: ci.Cursor) -> str | None:
    f = cursor.location.file
    return f.name if f is not None else None
