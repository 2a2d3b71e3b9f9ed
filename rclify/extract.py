"""Planning and rendering the extraction of critical regions into functions.

For one source file, FileExtractor turns every extractable region into
  - a context struct and a `static int rclify_cs_<function>_<n>(void *)` placed before the
    enclosing function (templates/extract/cs_function.c.j2), whose body is the region's code
    with the caller's locals reached through the context and each early exit a `return FLAG;`
  - a call site replacing the region (templates/extract/call_site.c.j2): fill the context, run
    the section with RCL_EXECUTE, then run the tail of the exit it took.
Captured locals go by value when they are scalars the section only reads, by reference
otherwise (writes, address taken, arrays, structs, macro arguments).  A variable declared in the
region and used after it is hoisted: declared before the call, assigned in the section.
"""

import functools
import re
from dataclasses import dataclass, field

import clang.cindex as ci
import jinja2

from rclify.cparse import ParsedFile
from rclify.ctokens import identifiers_used, rename_identifiers, tokenize
from rclify.analyse import uses_thread_state
from rclify.lockops import Wrapper
from rclify.paths import TEMPLATES_DIR
from rclify.regions import Exit, Region

K = ci.CursorKind
T = ci.TypeKind
_SCALARS = {T.BOOL, T.CHAR_U, T.UCHAR, T.CHAR16, T.CHAR32, T.USHORT, T.UINT, T.ULONG, T.ULONGLONG,
            T.UINT128, T.CHAR_S, T.SCHAR, T.WCHAR, T.SHORT, T.INT, T.LONG, T.LONGLONG, T.INT128,
            T.FLOAT, T.DOUBLE, T.LONGDOUBLE, T.POINTER, T.ENUM}
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"}
_FUNC_NAMES = ("__func__", "__FUNCTION__", "__PRETTY_FUNCTION__")


@functools.cache
def _templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR / "extract")),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )


def declarator(type_spelling: str, name: str) -> str:
    """A C declaration of `name` with the given type: ('char [16]', '(*b)') -> 'char (*b)[16]'.

    Plain types get the simplest spelling (`item **p`, not `item * (*p)`): Coccinelle, which
    rewrites this code next, reads `T * (*p)` with an unknown typedef T as an expression."""
    if name.startswith("(*") and name.endswith(")") and "(" not in type_spelling and "[" not in type_spelling:
        return f"{type_spelling.rstrip()}{'' if type_spelling.endswith('*') else ' '}*{name[2:-1]}"
    if "(*" in type_spelling:
        at = type_spelling.index("(*") + 2
        return type_spelling[:at] + name + type_spelling[at:]
    if "[" in type_spelling:
        at = type_spelling.index("[")
        return type_spelling[:at].rstrip() + " " + name + type_spelling[at:]
    return f"{type_spelling} {name}"


@dataclass
class Capture:
    name: str
    field: str  # declaration in the context struct
    init: str  # its value at the call site
    use: str  # how the section reads it
    guards: list[str] = field(default_factory=list)  # #if lines the declaration sits under


@dataclass
class Extraction:
    region: Region
    n: int
    fn_name: str
    ctx_type: str
    captures: list[Capture] = field(default_factory=list)
    hoisted: list[str] = field(default_factory=list)
    local: bool = False  # uses thread-local state: runs on the calling thread (rcl_execute_local)


class Refusal(Exception):
    """Planning found a reason the region cannot be extracted (a REASONS key)."""


class FileExtractor:
    def __init__(self, parsed: ParsedFile, regions: list[Region], thread_bound: set[str] = frozenset()):
        self.parsed = parsed
        self.regions = regions
        self.thread_bound = thread_bound  # functions that use thread-local state (analyse.py)
        self.functions: dict[int, list[str]] = {}  # enclosing function start -> generated C
        self.accessors_used: dict[str, Wrapper] = {}
        self.extractions: list[Extraction] = []
        self._call_sites: dict[int, str] = {}
        self._counters: dict[str, int] = {}
        self._decls = _Declarations()
        self._hoist_plan: dict[int, list[_Hoist]] = {}

    # -- public --------------------------------------------------------------------------
    def plan(self) -> None:
        """Decides every region's extraction (or refusal) and generates its code."""
        for region in self.regions:
            if region.extractable:
                try:
                    self._hoist_plan[region.start] = self._hoists(region)
                except Refusal as refusal:
                    region.problems.append((str(refusal), region.line))
        for region in self.regions:
            if region.extractable:
                self._call_site(region)  # plans (and may refuse) every region, nested ones first

    def render(self, wrappers_here: list[Wrapper], accessors_defined_here: list[Wrapper]) -> str | None:
        """The file's new text (after plan()), or None when nothing changes.

        wrappers_here: the wrapper functions defined in this file; accessors_defined_here: those
        whose accessor (used by some extracted region, maybe in another file) goes here."""
        if not self.extractions and not accessors_defined_here:
            return None
        extra = []  # at equal offsets, edits apply in list order: prototypes first
        # calls to a static wrapper may all have been extracted: keep -Wunused-function quiet
        extra += [(w.start_offset, w.start_offset, "__attribute__((unused)) ")
                  for w in wrappers_here if w.is_static]
        # one prototype per accessor, before its first use or definition
        # (-Wmissing-prototypes, -Wredundant-decls)
        needed = {w.name: w for w in [*self.accessors_used.values(), *accessors_defined_here]}
        if needed:
            first = min([*self.functions, *(w.end_offset for w in accessors_defined_here)])
            text = "".join(f"{accessor_prototype(w)};\n" for w in sorted(needed.values(), key=lambda w: w.name))
            defined = {w.name for w in accessors_defined_here}
            text += "".join(render_accessor(w, fallback=True) for w in sorted(needed.values(), key=lambda w: w.name)
                            if w.name not in defined and not w.is_static)
            extra.append((first, first, text + f"#line {self._line(first)}\n"))
        extra += [(w.end_offset, w.end_offset, render_accessor(w)) for w in accessors_defined_here]
        return self._render_range(0, len(self.parsed.data), extra, top_level=True)

    # -- rendering -----------------------------------------------------------------------
    def _render_range(self, start: int, end: int, extra: list[tuple[int, int, str]] = (),
                      top_level: bool = False) -> str:
        """Source text of [start, end) with extracted regions (and extra edits) replaced."""
        edits = [(r.start, r.end, self._call_sites[r.start]) for r in self.regions
                 if r.extractable and r.start in self._call_sites and start <= r.start and r.end <= end]
        edits += [e for e in extra if start <= e[0] and e[1] <= end]
        if top_level:
            for fn_start, generated in self.functions.items():
                edits.append((fn_start, fn_start, "".join(generated) + f"#line {self._line(fn_start)}\n"))
        edits.sort(key=lambda e: (e[0], -e[1]))
        out, pos = [], start
        for e_start, e_end, text in edits:
            if e_start < pos:
                continue  # inside an edit already applied (a nested region's own call site)
            out.append(self.parsed.text(pos, e_start))
            out.append(text)
            pos = e_end
        out.append(self.parsed.text(pos, end))
        return "".join(out)

    def _call_site(self, region: Region) -> str:
        if region.start in self._call_sites:
            return self._call_sites[region.start]
        for inner in self.regions:  # nested regions first: their call sites are part of our body
            if inner is not region and inner.extractable and region.contains(inner):
                self._call_site(inner)
        try:
            text = self._extract(region)
        except Refusal as refusal:
            region.problems.append((str(refusal), region.line))
            return ""
        self._call_sites[region.start] = text
        return text

    def _extract(self, region: Region) -> str:
        fn = region.function
        fn_name = fn.spelling
        n = self._counters.get(fn_name, 0) + 1
        extraction = Extraction(region, n, f"rclify_cs_{fn_name}_{n}", f"rclify_ctx_{fn_name}_{n}")

        hoists = self._hoist_plan[region.start]
        # a variable an enclosing region hoists too is declared once, by the outermost
        outer_hoisted = {h.start for r in self.regions if r is not region and r.extractable and r.contains(region)
                         for h in self._hoist_plan.get(r.start, [])}
        exit_edits = [(e.unlock_start, e.tail_end, f"return {e.flag};\n#line {self._line(e.tail_end)}\n")
                      for e in region.exits]
        hoist_edits = [(h.start, h.end, h.assignment) for h in hoists]
        body = self._render_range(region.lock_end, region.body_end, exit_edits + hoist_edits)

        captures = self._captures(region, body, {v.spelling: v for h in hoists for v in h.variables})
        mapping = {c.name: c.use for c in captures}
        mapping.update({name: f'"{fn_name}"' for name in _FUNC_NAMES})
        body = rename_identifiers(body, mapping)

        extraction.captures = captures
        extraction.hoisted = [v.spelling for h in hoists for v in h.variables]
        extraction.local = self._thread_bound(region)
        if region.lock.wrapper is not None:
            self.accessors_used[region.lock.wrapper.name] = region.lock.wrapper
        indent = _indent_of(self.parsed.data, region.start)
        cs = _templates().get_template("cs_function.c.j2").render(
            function=fn_name, file=self.parsed.path.name, line=region.line,
            mutex_text=region.lock.mutex, ctx_type=extraction.ctx_type, captures=captures,
            fn_name=extraction.fn_name, body=body.rstrip(), body_line=self._line(region.lock_end),
            trylock=region.is_trylock,
        )
        exits = [{"flag": e.flag, "tail": self._tail_text(e), "line": self._line(e.tail_start)}
                 for e in region.exits]
        if region.is_trylock:  # paper Algorithm 3: the section is told whether it got the lock
            if region.after is not None and self.parsed.text(*region.after).strip():
                exits.insert(0, {"flag": 0, "tail": self._render_range(*region.after).strip(),
                                 "line": self._line(region.after[0])})
            if region.otherwise is not None:
                exits.insert(0, {"flag": -1, "tail": self._render_range(*region.otherwise).strip(),
                                 "line": self._line(region.otherwise[0])})
        call = _templates().get_template("call_site.c.j2").render(
            hoists=[region.lock.result] * bool(region.lock.result)
            + [h.declaration for h in hoists if h.start not in outer_hoisted],
            labeled=_is_labeled(region), indent=indent,
            ctx_type=extraction.ctx_type, n=f"{fn_name}_{n}", captures=captures, exits=exits,
            mutex=region.lock.mutex, fn_name=extraction.fn_name, trylock=region.is_trylock,
            local=extraction.local,
        ).rstrip("\n") + (f" {region.end_result}" if region.end_result else "") \
            + f"\n#line {self._line(region.end)}\n"
        self._counters[fn_name] = n
        self.functions.setdefault(_insertion_point(self.parsed.data, fn), []).append(cs)
        self.extractions.append(extraction)
        return call

    def _line(self, offset: int) -> int:
        """1-based line of an offset of the original file: generated code keeps lines with #line."""
        return self.parsed.data.count(b"\n", 0, offset) + 1

    def _tail_text(self, e: Exit) -> str:
        text = self._render_range(e.tail_start, e.tail_end).strip()
        if e.result:
            text = f"{e.result} {text}"
        if e.drop_final_break:
            tokens = tokenize(text)
            if len(tokens) >= 2 and tokens[-2].text == "break" and tokens[-1].text == ";":
                text = text[: tokens[-2].start].rstrip()
        return text

    # -- captures ------------------------------------------------------------------------
    def _captures(self, region: Region, body: str, hoisted: dict[str, ci.Cursor]) -> list[Capture]:
        decls = self._decls.of(region.function)
        inside = {name for name, cursors in decls.items()
                  if any(region.lock_end <= c.extent.start.offset < region.body_end for c in cursors)}
        if self._macro_bodies_use_locals(region, inside | set(hoisted)):
            # a macro body names the caller's local (memcached's APPEND_STAT uses `c`): the
            # section's text cannot be rewritten to reach it through the context
            raise Refusal("macro-uses-local")
        captures = []
        for name in sorted(identifiers_used(body)):
            visible = hoisted.get(name) or (decls.visible(name, region.start) if name in decls else None)
            if visible is None:
                continue  # a global, a function, a type, an enumerator, or declared inside
            if name in inside and name not in hoisted:
                raise Refusal("shadowed-variable")
            captures.append(self._capture(region, name, visible, body))
        return captures

    def _thread_bound(self, region: Region) -> bool:
        """Does the region use thread-local state, directly or through a function it calls?"""
        for node in region.home.walk_preorder():
            if not (region.lock_end <= node.extent.start.offset < region.body_end):
                continue
            if uses_thread_state(node) or (node.kind == K.CALL_EXPR and node.spelling in self.thread_bound):
                return True
        return False

    def _macro_bodies_use_locals(self, region: Region, declared_inside: set[str]) -> bool:
        """Does a macro expanded in the region refer to a local of the function that is not
        written in the invocation itself (so renaming the text cannot reach it)?"""
        fn = region.function
        fn_start, fn_end = fn.extent.start.offset, fn.extent.end.offset
        fn_file = fn.extent.start.file.name
        data = self.parsed.data
        for node in region.home.walk_preorder():
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
            if data[at : at + len(name)].decode(errors="replace") == name:
                continue  # written right there
            invocation = next(((s, e) for s, e in self.parsed.macro_uses if s <= at <= e), None)
            if invocation is None or name not in identifiers_used(self.parsed.text(invocation[0], invocation[1] + 1)):
                return True
        return False

    def _capture(self, region: Region, name: str, cursor: ci.Cursor, body: str) -> Capture:
        typ = cursor.type
        if typ.kind in (T.VARIABLEARRAY, T.DEPENDENTSIZEDARRAY):
            raise Refusal("variable-length-array")
        if _declared_inside(typ, region.function):
            raise Refusal("local-type")
        spelling = typ.spelling
        if "(anonymous" in spelling or "(unnamed" in spelling:
            raise Refusal("local-type")
        by_value = (typ.get_canonical().kind in _SCALARS and _only_read(name, body)
                    and not self._in_macro_argument(name, region))
        guards = preprocessor_guards(self.parsed.data, cursor.extent.start.offset)
        if guards is None:
            raise Refusal("conditional-declaration")
        if by_value:
            return Capture(name, declarator(spelling, name), name, f"rclify_ctx->{name}", guards)
        return Capture(name, declarator(spelling, f"(*{name})"), f"&{name}", f"(*rclify_ctx->{name})", guards)

    def _in_macro_argument(self, name: str, region: Region) -> bool:
        """Is name used inside a macro invocation in the region (the macro might assign it)?"""
        for start, end in self.parsed.macro_uses:
            if region.lock_end <= start and end <= region.body_end:
                if name in identifiers_used(self.parsed.text(start, end + 1)):
                    return True
        return False

    # -- hoisting ------------------------------------------------------------------------
    def _hoists(self, region: Region) -> list["_Hoist"]:
        """Variables declared in the region and used after it: in the rest of the region's block,
        or in the tail of an exit that follows them in their own block."""
        hoists = []
        home = region.home
        blocks = [home] + [
            n for n in home.walk_preorder()
            if n.kind == K.COMPOUND_STMT and region.lock_end <= n.extent.start.offset < region.body_end
        ]
        for block in blocks:
            for stmt in block.get_children():
                start = stmt.extent.start.offset
                if stmt.kind != K.DECL_STMT or not (region.lock_end <= start < region.body_end):
                    continue
                later = [self.parsed.text(e.tail_start, e.tail_end) for e in region.exits
                         if start < e.unlock_start < block.extent.end.offset]
                if block == home:
                    later.append(self.parsed.text(*region.later))
                declared = [c for c in stmt.get_children() if c.kind == K.VAR_DECL]
                if not {c.spelling for c in declared} & identifiers_used(" ".join(later)):
                    continue
                hoists.append(_Hoist.of(self.parsed, stmt, declared))
        return hoists


@dataclass
class _Hoist:
    """A declaration statement split in two: declarations before the call, assignments inside."""

    start: int
    end: int
    declaration: str  # before the call
    assignment: str  # in the section, in place of the declaration
    variables: list[ci.Cursor]

    @staticmethod
    def of(parsed: ParsedFile, stmt: ci.Cursor, variables: list[ci.Cursor]) -> "_Hoist":
        declarations, assignments = [], []
        for var in variables:
            typ = var.type
            if typ.kind in (T.CONSTANTARRAY, T.INCOMPLETEARRAY, T.VARIABLEARRAY) or var.storage_class in (
                ci.StorageClass.STATIC, ci.StorageClass.EXTERN
            ) or typ.is_const_qualified():
                raise Refusal("hoist-not-simple")
            init = [c for c in var.get_children() if c.kind.is_expression() or c.kind == K.INIT_LIST_EXPR]
            if init and init[-1].kind == K.INIT_LIST_EXPR:
                raise Refusal("hoist-not-simple")
            declarations.append(declarator(typ.spelling, var.spelling) + ";")
            if init:
                value = parsed.text(init[-1].extent.start.offset, init[-1].extent.end.offset)
                assignments.append(f"{var.spelling} = {value};")
        return _Hoist(stmt.extent.start.offset, stmt.extent.end.offset, " ".join(declarations),
                      " ".join(assignments) or ";", variables)


class _Declarations:
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
        fn_extent = (function.extent.start.offset, function.extent.end.offset)

        def visit(node: ci.Cursor, scope: tuple[int, int]) -> None:
            for child in node.get_children():
                if child.kind in (K.VAR_DECL, K.PARM_DECL) and child.storage_class != ci.StorageClass.EXTERN:
                    self.setdefault(child.spelling, []).append(child)
                    self.scopes[child.hash] = scope
                inner = scope
                if child.kind in (K.COMPOUND_STMT, K.FOR_STMT):
                    inner = (child.extent.start.offset, child.extent.end.offset)
                visit(child, inner)

        visit(function, fn_extent)

    def visible(self, name: str, at: int) -> ci.Cursor | None:
        best = None
        for cursor in self.get(name, []):
            scope = self.scopes[cursor.hash]
            if cursor.extent.start.offset < at and scope[0] <= at < scope[1]:
                if best is None or self.scopes[best.hash][0] <= scope[0]:
                    best = cursor
        return best


_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b", re.M)


def preprocessor_guards(data: bytes, offset: int) -> list[str] | None:
    """The #if/#ifdef/#ifndef lines whose first branch holds offset, outermost first; None when
    offset is in an #elif/#else branch (not reproduced)."""
    stack: list[tuple[str, bool]] = []  # (opening line, in its first branch)
    for m in _DIRECTIVE.finditer(data, 0, offset):
        word = m.group(1).decode()
        if word in ("if", "ifdef", "ifndef"):
            end = data.find(b"\n", m.start())
            line = data[m.start() : end if end >= 0 else len(data)].decode(errors="replace").strip()
            while line.endswith("\\"):  # continued directive
                nxt = data.find(b"\n", end + 1)
                line = line[:-1] + data[end + 1 : nxt if nxt >= 0 else len(data)].decode(errors="replace").strip()
                end = nxt
            stack.append((line, True))
        elif word in ("elif", "else") and stack:
            stack[-1] = (stack[-1][0], False)
        elif word == "endif" and stack:
            stack.pop()
    if any(not first for _, first in stack):
        return None
    return [line for line, _ in stack]


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


def _indent_of(data: bytes, offset: int) -> str:
    line_start = data.rfind(b"\n", 0, offset) + 1
    line = data[line_start:offset].decode(errors="replace")
    return line[: len(line) - len(line.lstrip())]


def _is_labeled(region: Region) -> bool:
    before = region.parsed.data[: region.start].rstrip()
    return before.endswith(b":")


def _insertion_point(data: bytes, function: ci.Cursor) -> int:
    """Before the function and the comments that document it, at the start of a line."""
    at = data.rfind(b"\n", 0, function.extent.start.offset) + 1
    while True:
        before = data[:at].rstrip()
        if before.endswith(b"*/"):
            opening = before.rfind(b"/*")
            if opening < 0:
                break
            line_start = data.rfind(b"\n", 0, opening) + 1
            if data[line_start:opening].strip():
                break  # the comment ends a line of code
            at = line_start
        else:
            line_start = before.rfind(b"\n") + 1
            if before[line_start:].lstrip().startswith(b"//"):
                at = line_start
            else:
                break
    return at


def accessor_prototype(wrapper: Wrapper) -> str:
    params = ", ".join(declarator(t, p) for t, p in zip(wrapper.param_types, wrapper.params)) or "void"
    storage = "static " if wrapper.is_static else ""
    return f"{storage}pthread_mutex_t *{wrapper.accessor}({params})"


def render_accessor(wrapper: Wrapper, fallback: bool = False) -> str:
    """The accessor of a wrapper's mutex; `fallback`: the weak one a caller file carries."""
    params = ", ".join(declarator(t, p) for t, p in zip(wrapper.param_types, wrapper.params)) or "void"
    template = "accessor_fallback.c.j2" if fallback else "accessor.c.j2"
    return _templates().get_template(template).render(wrapper=wrapper, params=params)
