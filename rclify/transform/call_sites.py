"""Every lock, unlock and trylock call site rclify saw, and what became of it.

The sites are the union of
  - discovery's (spatch: direct pthread_mutex_lock/unlock/trylock calls, in #define bodies too);
  - the analysis's (libclang): every call to those functions and to the tree's lock wrappers in
    the functions of the analysed files and headers, a call reached through a macro counted at
    the macro's invocation (`LOCK(m);`, `WITH_LOCK(m, x++);` is a lock and an unlock);
merged per (file, line, kind).  Each site is part of a region (the innermost whose statements
hold it: extracted or hybrid, as the region ends up) or left alone for one of LEFT_ALONE's
reasons, so that the report's counts add up to the sites found.
"""

from dataclasses import dataclass

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import preorder, top_level
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
    needles = [n.encode() for n in (names | set(vocab.macros))]
    sites = []
    for fn in top_level(parsed.tu).functions_in(parsed.path):
        text = parsed.data[fn.extent.start.offset : fn.extent.end.offset]
        if not any(n in text for n in needles):
            continue
        for node in preorder(fn):
            if node.kind != K.CALL_EXPR or node.spelling not in names:
                continue
            wrapper = vocab.wrappers.get(node.spelling)
            kind = wrapper.kind if wrapper is not None else PTHREAD_OPS[node.spelling]
            at = node.extent.start.offset
            written = _identifier_at(parsed.data, at)
            via = node.spelling if wrapper is not None else ("" if written == node.spelling else written)
            sites.append(CallSite(rel, node.location.line, kind, via, fn.spelling, at))
    return sites


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
            if holding:
                site.region = index[id(min(holding, key=lambda r: r.end - r.start))]
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
