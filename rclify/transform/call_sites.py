"""Every lock, unlock and trylock call site rclify saw, and what became of it.

The sites are the union of
  - discovery's (spatch: direct pthread_mutex_lock/unlock/trylock calls, in #define bodies too);
  - the analysis's (libclang): every call to those functions and to the tree's lock wrappers in
    the functions of the analysed files and headers, a call reached through a macro counted at
    the macro's invocation (`LOCK(m);`, `WITH_LOCK(m, x++);` is a lock and an unlock), and every
    call through a function pointer that may call one of them (pointer_call_sites: a field of an
    operations table that holds one, or a pointer of the type of a lock function some table holds);
merged per (file, line, kind).  Each site is part of a region (the innermost whose statements
hold it: extracted or hybrid, as the region ends up) or left alone for one of LEFT_ALONE's
reasons, so that the report's counts add up to the sites found.
"""

from dataclasses import dataclass

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import child_nodes, preorder, top_level
from rclify.ctext.preprocessor import define_around
from rclify.lock_identity.discovered_sites import Site
from rclify.transform.region_records import RegionRecord
from rclify.transform.regions import Region
from rclify.ctext.source_tree import SourceTree
from rclify.transform.vocabulary import PTHREAD_OPS, Vocabulary

K = ci.CursorKind
KINDS = ("lock", "unlock", "trylock")

LEFT_ALONE = {
    "in-macro-definition": "inside a #define: the macro's uses are counted where they are",
    "in-wrapper-function": "the body of a lock wrapper function: its calls are counted where they are",
    "unlock-outside-region": "an unlock that is part of no region (its lock is taken in another function "
                             "or by a region that ended before it)",
    "not-a-lock-statement": "a lock call that is not a statement rclify reads as one (its result returned or "
                            "used in an expression, or inside a macro that does more than lock)",
    "file-not-parsed": "in a file libclang could not parse",
    "not-seen-by-libclang": "seen by spatch only: in an #if branch this configuration does not compile, "
                            "or in code libclang could not parse",
    "not-analysed": "in a file the analysis does not read (a header no analysed C file includes)",
    "excluded": "in a file the transform leaves alone: vendored, or named by --exclude (exclusions.py)",
    "through-pointer": "a call through a function pointer that may call a lock function (via: the pointer and "
                       "the function): read as a lock statement only through a field of a const operations table "
                       "defined once, whose initialiser names the function (ops_tables.py)",
}


@dataclass
class CallSite:
    file: str  # relative to the tree's root
    line: int
    kind: str  # lock | unlock | trylock
    via: str = ""  # the macro or wrapper the call goes through
    function: str = ""
    offset: int = -1  # in the file (libclang); -1 when only spatch saw it
    region: int | None = None  # index of its region in Outcome.regions
    left_alone: str = ""  # a LEFT_ALONE key
    through: str = ""  # a call through a pointer: "table" (a const table's field, read), "pointer" (not read)

    def record(self, regions: list[RegionRecord]) -> dict:
        out = {"file": self.file, "line": self.line, "kind": self.kind, "via": self.via, "function": self.function}
        if self.region is not None:
            r = regions[self.region]
            return out | {"in_region": f"{r.file}:{r.line}", "status": r.status}
        return out | {"status": "left-alone", "reason": self.left_alone}


def analysed_sites(parsed: ParsedFile, rel: str, vocab: Vocabulary) -> list[CallSite]:
    """The lock/unlock/trylock calls in the functions of one analysed file (or header view)."""
    vocab = vocab.for_file(parsed)
    names = set(PTHREAD_OPS) | {w for w, wrapper in vocab.wrappers.items() if wrapper.kind in KINDS}
    pointers = _LockPointers(vocab, names)
    needles = [n.encode() for n in (names | set(vocab.macros) | pointers.words)]
    sites = []
    for fn in top_level(parsed.tu).functions_in(parsed.path):
        text = parsed.data[fn.extent.start.offset : fn.extent.end.offset]
        if not any(n in text for n in needles):
            continue
        for node in preorder(fn):
            if node.kind != K.CALL_EXPR:
                continue
            if node.spelling not in names or _through_pointer(node):
                if pointers.words and (site := pointers.site(node, rel, fn)) is not None:
                    sites.append(site)
                continue
            wrapper = vocab.wrappers.get(node.spelling)
            kind = wrapper.kind if wrapper is not None else PTHREAD_OPS[node.spelling]
            at = node.extent.start.offset
            written = _identifier_at(parsed.data, at)
            via = node.spelling if wrapper is not None else ("" if written == node.spelling else written)
            sites.append(CallSite(rel, node.location.line, kind, via, fn.spelling, at))
    return sites


class _LockPointers:
    """What calls through pointers may call a lock function: a field of an operations table
    (ops_tables.py) whose initialiser names one, or failing that any pointer of the type of a lock
    function some table holds (a call through a pointer of another type is undefined behaviour)."""

    def __init__(self, vocab: Vocabulary, names: set[str]):
        self.vocab = vocab
        self.kinds = {name: vocab.wrappers[name].kind if name in vocab.wrappers else PTHREAD_OPS[name]
                      for name in names}
        self.types: dict[str, str] = {}  # a lock function's type -> the function (the first named)
        self.words: set[str] = set()  # what a function's text names where it may call one so
        for table in vocab.tables.values():
            for path, function in table.fields.items():
                if function in self.kinds:
                    self.types.setdefault(table.types[path], function)
                    self.words |= {table.name, path.split(".")[-1]}

    def site(self, call: ci.Cursor, rel: str, fn: ci.Cursor) -> CallSite | None:
        callee = _callee(call)
        path = []
        node = callee
        while node is not None and node.kind == K.MEMBER_REF_EXPR:
            path.append(node.spelling)
            kids = [k for k in child_nodes(node) if k.kind.is_expression()]
            node = _looked_through(kids[0]) if kids else None
        table = self.vocab.tables.get(node.spelling) if node is not None and node.kind == K.DECL_REF_EXPR \
            and path else None
        at = call.extent.start.offset
        if table is not None and ".".join(reversed(path)) in table.fields:
            field = ".".join(reversed(path))
            function = table.fields[field]
            if function not in self.kinds:
                return None  # a table's other function (`OPS.alloc()`)
            return CallSite(rel, call.location.line, self.kinds[function], f"{table.name}.{field} ({function})",
                            fn.spelling, at, through="table" if table.resolvable else "pointer")
        pointee = callee.type.get_canonical()
        pointee = pointee.get_pointee().get_canonical() if pointee.kind == ci.TypeKind.POINTER else pointee
        function = self.types.get(pointee.spelling)
        if function is None:
            return None
        shown = callee.spelling or "a pointer"
        return CallSite(rel, call.location.line, self.kinds[function], f"{shown} (may call {function})",
                        fn.spelling, at, through="pointer")


def _callee(call: ci.Cursor) -> ci.Cursor:
    kids = child_nodes(call)
    return _looked_through(kids[0]) if kids else call


def _looked_through(expr: ci.Cursor) -> ci.Cursor:
    while expr.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR) or (
            expr.kind == K.UNARY_OPERATOR and expr.type.get_canonical().kind in (ci.TypeKind.FUNCTIONPROTO,
                                                                                ci.TypeKind.FUNCTIONNOPROTO)):
        kids = [k for k in child_nodes(expr) if k.kind.is_expression()]
        if len(kids) != 1:
            break
        expr = kids[0]
    return expr


def _through_pointer(call: ci.Cursor) -> bool:
    """Is call made through a pointer (its callee no function's name)?"""
    target = call.referenced
    return target is None or target.kind != K.FUNCTION_DECL


def _identifier_at(data: bytes, at: int) -> str:
    end = at
    while end < len(data) and (chr(data[end]).isalnum() or data[end] == ord("_")):
        end += 1
    return data[at:end].decode(errors="replace")


def merge(analysed: list[CallSite], discovered: list[Site]) -> list[CallSite]:
    """The analysis's sites, plus discovery's that the analysis did not see (per file, line and
    kind: a line where spatch counts more calls than libclang adds the difference)."""
    counts: dict[tuple[str, int, str], int] = {}
    for site in analysed:
        key = (site.file, site.line, site.kind)
        counts[key] = counts.get(key, 0) + 1
    out = list(analysed)
    for site in discovered:
        if site.kind not in KINDS:
            continue
        key = (site.file, site.line, site.kind)
        if counts.get(key, 0) > 0:
            counts[key] -= 1
        else:
            out.append(CallSite(site.file, site.line, site.kind, function=site.function))
    return sorted(out, key=lambda s: (s.file, s.line, s.offset, s.kind))


def attribute(sites: list[CallSite], regions: dict[str, list[Region]], index: dict[int, int],
              vocab: Vocabulary, tree: SourceTree, analysed: set[str], failures: dict[str, str]) -> None:
    """Gives each site its region (the innermost whose range holds it) or its LEFT_ALONE reason.
    regions: file -> its regions; index: id(region) -> its position in Outcome.regions;
    analysed: the files (C and headers) the analysis read."""
    for site in sites:
        if site.offset >= 0:
            if site.function in vocab.wrappers:
                site.left_alone = "in-wrapper-function"
                continue
            holding = [r for r in regions.get(site.file, []) if r.start <= site.offset < max(r.end, r.lock_end)
                       and r.function.spelling == site.function and id(r) in index]
            if holding and site.through != "pointer":
                site.region = index[id(min(holding, key=lambda r: r.end - r.start))]
            elif site.through == "pointer":
                site.left_alone = "through-pointer"
            else:
                site.left_alone = "unlock-outside-region" if site.kind == "unlock" else "not-a-lock-statement"
            continue
        if define_around(tree.text(site.file), site.line) is not None:
            site.left_alone = "in-macro-definition"
        elif site.file in failures and site.file not in analysed:
            site.left_alone = "file-not-parsed"
        elif site.file not in analysed:
            site.left_alone = "not-analysed"
        else:
            site.left_alone = "not-seen-by-libclang"


def summary(sites: list[CallSite], regions: list[RegionRecord]) -> dict:
    """{"found", "in_extracted_regions", "in_hybrid_regions", "left_alone": {reason: n}}: the
    last three add up to found."""
    extracted = sum(1 for s in sites if s.region is not None and regions[s.region].extracted)
    hybrid = sum(1 for s in sites if s.region is not None and not regions[s.region].extracted)
    left: dict[str, int] = {}
    for s in sites:
        if s.region is None:
            left[s.left_alone] = left.get(s.left_alone, 0) + 1
    return {"found": len(sites), "in_extracted_regions": extracted, "in_hybrid_regions": hybrid,
            "left_alone": dict(sorted(left.items()))}
