"""`rclify transform`'s steps, in the order data flows (transform_tree.py runs them, or rerun.py on
a tree rclify has transformed already).

  (read once)          the tree's files, by relative path; their includes     ctext/: source_tree.py, includes.py
  discover  (spatch)   lock allocation sites, init calls, parse failures      discover.py
  analyse   (libclang) the vocabulary (macros, wrappers), statements read as  analyse.py, vocabulary*.py,
                       lock operations, every function's regions, and why a   lock_statements/, regions.py,
                       region stays hybrid                                    region_*.py, refusals.py
  plan + render        extractions: captures, hoists, placement; context      plan.py, hoisting.py, placement.py,
                       structs, functions, call sites (per idiom: shapes/)    render.py, shapes/
  lock table           one lock_config.h entry per allocation site            lock_table.py, lock_helpers/, ...
  kept posix           locks that stay pthread mutexes (consistent, ...)      kept_posix.py
  rewrite + check      (spatch) types, initializers, condvars; compile check  rewrite_api.py, compile_check.py
                       verdicts; this module decides each region's fate
  apply                every changed file replaced atomically, backups        apply.py, journal.py, records.py
  report               summary on stdout, JSON with --report                  report.py

spatch's discovery runs beside the reading of the regions, once libclang's parsing (which keeps
every core busy) is done: the regions' bounds need nothing it finds, the lock table does.

Nothing is written until every step has succeeded (output paths are checked before the first); a
file that a parser cannot read is left as it was and reported.
"""

import json
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import clang.cindex as ci

from rclify import atomic_file, lock_config
from rclify.ctext import line_endings, spatch, tree_macros
from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import preorder
from rclify.errors import UsageError
from rclify.progress import Progress, step
from rclify.transform import build_flags, call_sites, exclusions, header_sections
from rclify.transform.analyse import Analysis, analyse, complete_call_graph, regions_of
from rclify.ctext.languages import is_cxx
from rclify.transform.cxx import cxx_regions
from rclify.lock_identity.discovered_sites import NOT_HANDLED, RWLOCK_CALLS, RWLOCK_HYBRID, Discovery
from rclify.transform.discover import discover
from rclify.ctext.includes import IncludeGraph
from rclify.transform.kept_posix import KeptPosix, find_kept_posix
from rclify.lock_identity.lock_helpers import kept_call_sites
from rclify.lock_identity.lock_table import LockTable, build_lock_table
from rclify.transform.refusals import Reason
from rclify.transform.regions import Region
from rclify.transform.render import FileRenderer
from rclify.transform.region_records import RegionRecord
from rclify.transform.report import Outcome, report_json
from rclify.ctext.source_tree import SourceTree
from rclify.transform.thread_state import ThreadState
from rclify.transform.compile_check import Staging

@dataclass
class Options:
    src: Path
    output: Path | None = None
    config: Path | None = None
    dry_run: bool = False
    report: Path | None = None
    jobs: int = 1
    cflags: list[str] = field(default_factory=list)
    quiet: bool = False
    database: Path | None = None  # -p: where compile_commands.json is
    configure: bool = False  # a dry run runs the tree's build scripts for its flags (build_flags/)
    exclude: list[str] = field(default_factory=list)  # --exclude: paths left alone (exclusions.py)
    include_vendored: bool = False  # vendored directories transformed too


def analyse_tree(tree: SourceTree, config_path: Path, options: Options, progress: Progress,
                 shown: Path | None = None) -> Outcome:
    """Every step short of writing: the Outcome, with `changed` the new text of each file.
    shown: the tree's name in progress lines (its root may be a staging copy of it)."""
    spatch.check_version()
    outcome = Outcome(tree.root)
    outcome.files_scanned = len(tree.files)
    tree, left_out = _leave_alone(tree, options, outcome, progress)
    root, files = tree.root, tree.files
    cxx = sum(map(is_cxx, files))
    progress(f"{len(files) - cxx} C files{f' and {cxx} C++ files' if cxx else ''} under {shown or root}")

    includes = IncludeGraph.by_base_name(tree)  # and asks one include graph (analysis, lock table, check)
    macro_file = _spatch_macro_file(tree, outcome, progress)
    cleanups = [lambda: macro_file.unlink(missing_ok=True)]
    with step(progress, "build flags"):  # as the build compiles
        flags = build_flags.find(root, options.database, options.cflags, progress,
                                 run_build=not options.dry_run or options.configure)
    cleanups.append(flags.cleanup)  # scratch build directories, header stubs
    beside = ThreadPoolExecutor(max_workers=1)  # spatch's discovery, beside the regions' reading
    try:
        outcome.build_flags = flags.source
        outcome.timings["spatch_discover_s"] = 0.0  # the report lists the steps in their order of old
        with _timed(outcome, "libclang_s"), step(progress, "libclang"):
            analysis = analyse(root, files, flags.for_file, options.jobs, progress, flags.built, tree, includes)
        cleanups.append(analysis.cleanup)
        # Where regions start and end needs nothing spatch's discovery finds (the lock table and
        # the locks kept posix do): it runs while they are read, Python on one core, where during
        # libclang's parsing both cores were busy
        discovering = beside.submit(_timed_call, outcome, "spatch_discover_s", discover, root, files,
                                    jobs=options.jobs, progress=progress, macro_file=macro_file, texts=tree.texts())
        sources = {**analysis.parsed, **analysis.headers}
        with _timed(outcome, "extract_s"), step(progress, "regions", len(sources), "files read") as reading:
            regions = _regions(sources, analysis, flags.built, reading.advance)
        discovery = discovering.result()
        _record_discovery(discovery, outcome, progress)
        _record_analysis(analysis, outcome, progress)

        table = build_lock_table(discovery, tree.texts(), includes)
        outcome.api_notes += table.notes
        kept = find_kept_posix(tree.texts(), discovery, table)  # locks the runtime cannot take over
        outcome.kept_posix = [k.record() for k in kept.kept]
        with _timed(outcome, "extract_s"):
            for path, found in regions.items():
                _refuse_kept(tree.rel(path), found, kept)

        # read once: what the entries are merged with is what the commit checks is still there
        outcome.config_read = config_path.read_text() if config_path.is_file() else None
        existing_text, shown_config = outcome.config_read or "", str(_as_shown(config_path, root, shown))
        overrides = {o.section: o for o in lock_config.parse_sections(existing_text, shown_config)}
        with _timed(outcome, "thread_state_s"), step(progress, "call graph"):
            roots = {callee for rs in regions.values() for r in rs if r.extractable for callee in _callees(r)}
            state = complete_call_graph(root, files, analysis, roots, options.jobs, progress, flags.built)
        with _timed(outcome, "render_s"), step(progress, "extract"):
            for path, found in regions.items():
                _use_own_static_wrappers(tree.rel(path), found, analysis.vocab)
            rendered, index, rerender = _extract(tree, sources, analysis, regions, outcome, state, overrides,
                                                 progress)
            _call_sites(tree, sources, analysis, regions, index, discovery, outcome)
            outcome.call_sites += exclusions.call_sites(tree, [f for fs in left_out.values() for f in fs])
            outcome.regions += cxx_regions(tree, flags.for_file, analysis.vocab, options.jobs,
                                           outcome.failures)  # listed, hybrid: c++-source
        progress(f"extracted {sum(r.extracted for r in outcome.regions)} of "
                 f"{len(outcome.regions)} regions ({outcome.timings['extract_s'] + outcome.timings['render_s']:.1f}s)")

        kept_ids = set(kept.lock_ids)
        kept_ids |= kept_call_sites(table.sites, kept_ids)
        existing = lock_config.parse(existing_text, shown_config)
        entries = [e for e in table.entries() if e.lock_id not in kept_ids]  # kept ones stay pthread mutexes
        outcome.locks = lock_config.merge(entries, existing)  # what the staged lock_config.h declares
        with _timed(outcome, "spatch_rewrite_and_verify_s"), step(progress, "API rewrite and compile check"), \
                Staging(tree, table, config_path, flags=flags, jobs=options.jobs, outcome=outcome,
                        progress=progress, kept=kept, macro_file=macro_file, by_base_name=includes) as staging:
            changed = staging.stage(files, rendered)
            _settle_compile_failures(staging, changed, rerender)
            outcome.changed = {rel: line_endings.as_in(tree.data(rel), text) for rel, text in changed.items()}

        _count_regions(entries, table, outcome)  # as written: the compile check may have left some hybrid
        progress(f"rewrote the lock API in {len(outcome.changed)} files "
                 f"({outcome.timings['spatch_rewrite_and_verify_s']:.1f}s)")
    finally:
        beside.shutdown()  # spatch done, or ended by the signal's handler, before its macro file goes
        for cleanup in cleanups:
            cleanup()
    return outcome


def _as_shown(path: Path, root: Path, shown: Path | None) -> Path:
    """path as the user knows it: a rerun reads the tree's files (lock_config.h too) in a scratch
    copy of it, and an error in the user's lock_config.h must name theirs, not the copy's."""
    return shown / path.relative_to(root) if shown is not None and path.is_relative_to(root) else path


def _leave_alone(tree: SourceTree, options: Options, outcome: Outcome, progress: Progress
                 ) -> tuple[SourceTree, dict[str, list[str]]]:
    """The tree without what the transform leaves alone (exclusions.py: --exclude, rclify.toml,
    vendored directories), and {excluded path: its source files}; each path in the outcome."""
    excluded = exclusions.find(tree.root, options.exclude, options.include_vendored)
    kept, left_out = exclusions.split(tree, excluded)
    for e in excluded:
        if e.path in left_out:
            outcome.excluded[e.path] = e.why
            progress(f"left alone: {e.path} ({e.why})")
    return kept, left_out


_REGION_ROUNDS = 3  # renderings of a file, each without more failing regions, before its API rewrite alone


def _settle_compile_failures(staging: Staging, changed: dict[str, str], rerender: Callable) -> None:
    """The fate of what the compile check refuses (compile_check.py gives verdicts, this decides):
    a C file with extracted code is rendered again without the regions gcc's errors are in (a
    failed compile costs those regions, not the whole file), else gets the API rewrite alone; a
    file that still does not compile is left unchanged, with every file that must stay with it."""
    broken = {}
    for rel, verdict in staging.check(changed).items():
        if verdict.extracted and (_without_failing_regions(staging, rel, changed, rerender)
                                  or staging.api_rewrite_alone(rel, verdict.error, changed)):
            continue
        broken[rel] = verdict.error
    if broken:
        staging.leave_unchanged(broken, changed)


def _without_failing_regions(staging: Staging, rel: str, changed: dict[str, str], rerender: Callable) -> bool:
    """rel rendered again without the regions its errors are in, a few rounds; whether that compiles."""
    refused: dict[int, str] = {}
    failing = staging.failing_regions(rel, set())
    for _ in range(_REGION_ROUNDS):
        if not failing:  # it compiles (None), or no region holds the errors ({})
            break
        refused.update(failing)
        text = rerender(rel, set(refused))
        if text is None:
            return False
        failing = staging.recheck(rel, text, set(refused))
    if failing is not None or not refused:
        return False
    staging.keep_without(rel, refused, changed)
    return True


def _regions(sources: dict[Path, ParsedFile], analysis: Analysis, built: Callable[[Path], bool],
             read: Callable[[], None]) -> dict[Path, list[Region]]:
    """Every region of the analysed files and headers, those no step may extract refused: in a
    header where it is unsafe, in a file the build does not compile (then those on a lock kept
    posix: _refuse_kept, once discovery is done).  read(): one more file read (progress)."""
    regions = {}
    for path, parsed in sources.items():
        regions[path] = [r for fr in regions_of(parsed, analysis.vocab) for r in fr.regions]
        read()
    for path, view in analysis.headers.items():
        header_sections.refuse_unsafe(view, regions[path])
    for path, found in regions.items():
        seen_through = sources[path].includer or path  # a header: the C file it was read in
        if seen_through.suffix == ".c" and not built(seen_through):  # no compile check could verify them
            for region in found:
                region.refuse(Reason.NOT_BUILT, region.line, first=True)
    return regions


def _spatch_macro_file(tree: SourceTree, outcome: Outcome, progress: Progress) -> Path:
    """spatch's macro file for this tree: ours and the tree's declaration macros (tree_macros.py)."""
    path, names, loops = tree_macros.macro_file_for(tree.texts())
    for kind, found in (("declaration macros of the tree as empty", names),
                        ("loop header macros of the tree as `for (;;)`", sorted(loops))):
        if found:
            shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
            note = f"spatch reads {len(found)} {kind}: {shown}"
            progress(note)
            outcome.api_notes.append(note)
    return path


def finish(outcome: Outcome, options: Options, progress: Progress) -> None:
    outcome.timings["total_s"] = time.monotonic() - progress.started
    if options.report:
        write_report(options.report, outcome, options.dry_run)


def write_report(path: Path, outcome: Outcome, dry_run: bool) -> None:
    """Checked before the work began (_check_arguments); this is for what changed since."""
    try:
        atomic_file.write_text(path, json.dumps(report_json(outcome), indent=2) + "\n")
    except OSError as err:
        done = "nothing was changed" if dry_run or not outcome.changed else "the transform itself was applied"
        raise UsageError(f"--report {path}: cannot write: {err.strerror} ({done})") from None


class _timed:
    """with _timed(outcome, key): stores the block's duration in outcome.timings[key]."""

    def __init__(self, outcome: Outcome, key: str):
        self.outcome, self.key = outcome, key

    def __enter__(self):
        self.started = time.monotonic()

    def __exit__(self, *exc):
        timings = self.outcome.timings
        timings[self.key] = timings.get(self.key, 0.0) + time.monotonic() - self.started


def _timed_call(outcome: Outcome, key: str, function: Callable, *args, **kwargs):
    """function(*args, **kwargs), its duration stored as _timed stores a block's."""
    with _timed(outcome, key):
        return function(*args, **kwargs)


def _record_discovery(discovery: Discovery, outcome: Outcome, progress: Progress) -> None:
    outcome.failures.update(discovery.failures)
    outcome.not_handled = [{"api": NOT_HANDLED[s.kind], "call": s.api, "file": s.file, "line": s.line,
                            "function": s.function, "lock": s.expr, "text": f"{s.api}({', '.join(s.args)})"}
                           for s in discovery.of_kind(*NOT_HANDLED)]
    outcome.rwlock_calls = [{"call": s.api, "file": s.file, "line": s.line, "function": s.function, "lock": s.expr,
                             "text": f"{s.api}({', '.join(s.args)})", "status": "hybrid", "reason": RWLOCK_HYBRID}
                            for s in discovery.of_kind(RWLOCK_CALLS)]
    progress(f"discovered {len(discovery.sites)} lock sites ({outcome.timings['spatch_discover_s']:.1f}s)")


def _record_analysis(analysis: Analysis, outcome: Outcome, progress: Progress) -> None:
    outcome.failures.update(analysis.failures)
    outcome.stubbed_headers = list(analysis.stubbed_headers)
    if outcome.stubbed_headers:
        progress(f"headers not found, parsed as empty: {', '.join(outcome.stubbed_headers[:5])}"
                 f"{' ...' if len(outcome.stubbed_headers) > 5 else ''}")
    outcome.wrappers = [
        {"name": w.name, "kind": w.kind, "file": w.file, "lock": w.identity or w.expr, "params": list(w.params)}
        for w in sorted(analysis.vocab.wrappers.values(), key=lambda w: w.name)
    ]


def _use_own_static_wrappers(rel: str, found: list[Region], vocab) -> None:
    """A static wrapper is the file's own: a region that reached a static wrapper of another file
    by name takes this file's definition of it (its accessor and work are generated here), when it
    locks the same expression; a region left with another file's static wrapper is refused."""
    for region in found:
        wrapper = region.lock.wrapper
        if wrapper is not None and wrapper.is_static and not wrapper.in_header and wrapper.file != rel:
            twin = vocab.static_twins.get((rel, wrapper.name))
            if twin is not None and (twin.expr, twin.kind, twin.params, twin.work) == \
                    (wrapper.expr, wrapper.kind, wrapper.params, wrapper.work):
                region.lock = replace(region.lock, wrapper=twin)
        # the section and its call site call the wrapper it locks through and the work functions;
        # an inner wrapper's accessor is called by the outer's, in the outer's file
        # (lib_mtx_lock -> plat_mtx_lock -> a static checked helper of plat.c)
        direct = {w.name for w in region.wrappers_called()}
        others = [w for w in region.wrappers_used()
                  if w.is_static and not w.in_header and w.file != rel and (w.name in direct or w.work)]
        if others:
            region.refuse(Reason.UNRECOGNIZED_LOCK_SHAPE, region.line)
            region.unrecognized = region.unrecognized or (
                f"{others[0].name}(), a static function of {others[0].file}, would have to be called from {rel}")


def _callees(region: Region) -> set[str]:
    return {n.spelling for n in preorder(region.home)
            if n.kind == ci.CursorKind.CALL_EXPR and region.lock_end <= n.extent.start.offset < region.body_end}


def _extract(tree: SourceTree, sources: dict[Path, ParsedFile], analysis: Analysis, regions: dict[Path, list[Region]],
             outcome: Outcome, state: ThreadState,
             overrides: dict[str, lock_config.SectionOverride], progress: Progress
             ) -> tuple[dict[Path, str], dict[int, int], Callable]:
    """Plans and renders every file's regions (the C files', the headers'); returns {path: new
    text} of the files that change, {id(region): its position in outcome.regions}, and a function
    rendering a C file again with some of its regions left hybrid (_settle_compile_failures)."""
    renderers = {}
    total = sum(map(len, regions.values()))
    with step(progress, "extract", total, "regions planned") as planning:
        for path, parsed in sources.items():
            renderer = FileRenderer(parsed, regions[path], state, overrides)
            renderer.plan()
            renderers[path] = renderer
            planning.advance(len(regions[path]))
    used = {}  # (file, name): a static wrapper may be defined under one name in several files
    for renderer in renderers.values():
        used.update({(w.file, name): w for name, w in renderer.accessors_used.items()})
    wrappers = analysis.vocab.wrappers.values()
    rendered, index = {}, {}

    def render(path: Path, renderer: FileRenderer) -> str | None:
        rel = tree.rel(path)
        return renderer.render([w for w in wrappers if w.file == rel], [w for w in used.values() if w.file == rel])

    with step(progress, "extract", total, "regions rendered") as rendering:
        for path, renderer in renderers.items():
            rel = tree.rel(path)
            text = render(path, renderer)
            if text is not None:
                rendered[path] = text
            index.update({id(r): len(outcome.regions) + i for i, r in enumerate(renderer.regions)})
            outcome.regions.extend(RegionRecord.of(rel, r, renderer) for r in renderer.regions)
            rendering.advance(len(regions[path]))
    overridden = {r.overridden_section for r in outcome.regions} - {None}
    outcome.unused_overrides = sorted(set(overrides) - overridden)

    def rerender(rel: str, refused_lines: set[int]) -> str | None:
        """The C file rel rendered again with the regions starting at refused_lines hybrid."""
        path = tree.root / rel
        if path not in renderers or path.suffix != ".c":
            return None
        for region in regions[path]:
            if region.line in refused_lines and region.extractable:
                region.refuse(Reason.GENERATED_CODE_DOES_NOT_COMPILE, region.line, first=True)
        renderer = FileRenderer(sources[path], regions[path], state, overrides)
        renderer.plan()
        text = render(path, renderer)
        for extraction in renderer.extractions:  # a function's sections are numbered anew
            outcome.regions[index[id(extraction.region)]].renumbered(extraction.fn_name)
        return text

    return rendered, index, rerender


def _call_sites(tree: SourceTree, sources: dict[Path, ParsedFile], analysis: Analysis, regions: dict[Path, list[Region]],
                index: dict[int, int], discovery: Discovery, outcome: Outcome) -> None:
    """Every lock/unlock/trylock call site seen, each in a region or left alone with a reason."""
    rel = {path: tree.rel(path) for path in sources}
    analysed = [site for path, parsed in sources.items()
                for site in call_sites.analysed_sites(parsed, rel[path], analysis.vocab)]
    sites = call_sites.merge(analysed, discovery.of_kind(*call_sites.KINDS))
    call_sites.attribute(sites, {rel[p]: rs for p, rs in regions.items()}, index, analysis.vocab, tree,
                         set(rel.values()), analysis.failures)
    outcome.call_sites = sites


def _refuse_kept(rel: str, regions: list, kept: KeptPosix) -> None:
    """Regions on a lock kept posix (or not kept apart: kept_posix.py) stay hybrid."""
    for region in regions:
        if kept.refusal(rel, region.function.spelling, region.lock.wrapper_expr or region.lock.mutex,
                        region.parsed.text(region.start, region.end)):
            region.refuse(Reason.LOCK_KEPT_POSIX, region.line, first=True)


def _count_regions(entries: list[lock_config.LockEntry], table: LockTable, outcome: Outcome) -> None:
    """Each entry's description says how many regions lock it and how many were extracted; each
    region record gets its lock's id."""
    counts: dict[str, Counter] = {}
    for region in outcome.regions:
        lock_id = table.match_lock(region.lock_expr, region.file, region.function)
        if lock_id is not None:
            counts.setdefault(lock_id, Counter())[region.status] += 1
            region.lock_id = lock_id
    for entry in entries:
        c = counts.get(entry.lock_id, Counter())
        total = c["extracted"] + c["hybrid"]
        entry.description = (f"{entry.description}; {total} region{'s' if total != 1 else ''}, "
                             f"{c['extracted']} extracted")
