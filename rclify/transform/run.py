"""`rclify transform`: the pipeline, in the order data flows.

  discover  (spatch)   lock allocation sites, init calls, parse failures      discover.py
  analyse   (libclang) the vocabulary (macros, wrappers), every function's    analyse.py, vocabulary.py,
                       regions, and why a region stays hybrid                 regions.py, refusals.py
  plan + render        extractions: context structs, functions, call sites   plan.py, render.py
  lock table           one lock_config.h entry per allocation site            lock_table.py
  rewrite + verify     (spatch) types, initializers, condvars; compile check  rewrite_api.py, verify.py
  apply                every changed file replaced atomically, backups        apply.py
  report               summary on stdout, JSON with --report                  report.py

Nothing is written until every step has succeeded; a file that a parser cannot read is left as
it was and reported.
"""

import json
import os
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import clang.cindex as ci

from rclify import lock_config
from rclify.ctext import spatch
from rclify.errors import UsageError
from rclify.progress import Progress
from rclify.ctext.cparse import ParsedFile
from rclify.transform import apply as apply_step, call_sites, headers
from rclify.transform.analyse import Analysis, analyse, complete_call_graph, regions_of
from rclify.transform.discover import Discovery, discover
from rclify.transform.lock_table import LockTable, build_lock_table
from rclify.transform.regions import Region
from rclify.transform.render import FileRenderer
from rclify.transform.report import Outcome, print_diff, region_record, report_json
from rclify.transform.thread_state import ThreadState
from rclify.transform.verify import Staging

SOURCE_SUFFIXES = (".c", ".h")


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


def run(options: Options) -> Outcome:
    progress = Progress(options.quiet)
    root = _prepare_tree(options)
    config_path = (options.config or root / "lock_config.h").resolve()
    outcome = Outcome(root)
    state = apply_step.read_state(root)
    if state is not None:
        outcome.already_transformed = True
        progress(f"{root} was transformed by rclify {state['version']}: nothing to do")
        return outcome
    files = _source_files(root)
    apply_step.refuse_foreign_transformation(root, files)
    spatch.check_version()
    outcome.files_scanned = len(files)
    progress(f"{len(files)} C files under {root}")

    with _timed(outcome, "spatch_discover_s"):
        discovery = discover(root, files, jobs=options.jobs, progress=progress)
    outcome.failures.update(discovery.failures)
    progress(f"discovered {len(discovery.sites)} lock sites ({outcome.timings['spatch_discover_s']:.1f}s)")

    defines = [*_build_defines(root, progress), *options.cflags]  # as the tree's build compiles it
    with _timed(outcome, "libclang_s"):
        analysis = analyse(root, files, [f"-I{root}", *defines], options.jobs, progress)
    _record_analysis(analysis, outcome, progress)

    overrides = {o.section: o for o in lock_config.read_sections(config_path)}
    with _timed(outcome, "extract_s"):
        sources = {**analysis.parsed, **analysis.headers}
        regions = {path: [r for fr in regions_of(parsed, analysis.vocab) for r in fr.regions]
                   for path, parsed in sources.items()}
        for path, view in analysis.headers.items():
            headers.refuse_unsafe(view, regions[path])
    with _timed(outcome, "thread_state_s"):
        roots = {callee for rs in regions.values() for r in rs if r.extractable for callee in _callees(r)}
        state = complete_call_graph(root, files, analysis, roots, options.jobs, progress)
    with _timed(outcome, "extract_s"):
        rendered, index = _extract(root, sources, analysis, regions, outcome, state, overrides)
        _call_sites(root, sources, analysis, regions, index, discovery, outcome)
    progress(f"extracted {sum(r['status'] == 'extracted' for r in outcome.regions)} of "
             f"{len(outcome.regions)} regions ({outcome.timings['extract_s']:.1f}s)")

    table = build_lock_table(discovery)
    outcome.locks = _lock_entries(table, outcome, config_path)
    staging = Staging(root, table, config_path, defines, options.jobs, outcome, progress)
    with _timed(outcome, "spatch_rewrite_and_verify_s"):
        outcome.changed = staging.rewrite_and_verify(files, rendered)
    progress(f"rewrote the lock API in {len(outcome.changed)} files "
             f"({outcome.timings['spatch_rewrite_and_verify_s']:.1f}s)")
    if options.dry_run:
        print_diff(root, outcome, config_path)
    else:
        apply_step.apply(root, outcome, config_path)
    outcome.timings["total_s"] = time.monotonic() - progress.started
    if options.report:
        options.report.write_text(json.dumps(report_json(outcome), indent=2) + "\n")
    return outcome


class _timed:
    """with _timed(outcome, key): stores the block's duration in outcome.timings[key]."""

    def __init__(self, outcome: Outcome, key: str):
        self.outcome, self.key = outcome, key

    def __enter__(self):
        self.started = time.monotonic()

    def __exit__(self, *exc):
        timings = self.outcome.timings
        timings[self.key] = timings.get(self.key, 0.0) + time.monotonic() - self.started


def _prepare_tree(options: Options) -> Path:
    src = options.src.resolve()
    if not src.is_dir():
        raise UsageError(f"{options.src}: not a directory")
    if options.output is None:
        return src
    out = options.output.resolve()
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{options.output}: output directory exists and is not empty")
    if options.dry_run:
        return src
    shutil.copytree(src, out, symlinks=True, dirs_exist_ok=True)
    return out


def _source_files(root: Path) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES) and name != "lock_config.h":
                files.append(Path(dirpath) / name)
    return files


def _build_defines(root: Path, progress: Progress) -> list[str]:
    """What the tree's own build would define.  Autotools builds pass -DHAVE_CONFIG_H; before
    ./configure there is no config.h, and the analysis (which then refuses the functions it
    cannot parse) is much poorer: say so."""
    if (root / "config.h").exists():
        return ["-DHAVE_CONFIG_H"]
    if (root / "configure").exists() or (root / "config.h.in").exists():
        progress("warning: the tree is not configured (no config.h): run ./configure first, "
                 "or regions in functions that need it will be left hybrid (parse-errors)")
    return []


def _record_analysis(analysis: Analysis, outcome: Outcome, progress: Progress) -> None:
    outcome.failures.update(analysis.failures)
    outcome.stubbed_headers = list(analysis.stubbed_headers)
    if outcome.stubbed_headers:
        progress(f"headers not found, parsed as empty: {', '.join(outcome.stubbed_headers[:5])}"
                 f"{' ...' if len(outcome.stubbed_headers) > 5 else ''}")
    outcome.wrappers = [
        {"name": w.name, "kind": w.kind, "file": w.file, "lock": w.expr, "params": list(w.params)}
        for w in sorted(analysis.vocab.wrappers.values(), key=lambda w: w.name)
    ]


def _callees(region: Region) -> set[str]:
    return {n.spelling for n in region.home.walk_preorder()
            if n.kind == ci.CursorKind.CALL_EXPR and region.lock_end <= n.extent.start.offset < region.body_end}


def _extract(root: Path, sources: dict[Path, ParsedFile], analysis: Analysis, regions: dict[Path, list[Region]],
             outcome: Outcome, state: ThreadState,
             overrides: dict[str, lock_config.SectionOverride]) -> tuple[dict[Path, str], dict[int, int]]:
    """Plans and renders every file's regions (the C files', the headers'); returns {path: new
    text} of the files that change, and {id(region): its position in outcome.regions}."""
    renderers = {}
    for path, parsed in sources.items():
        renderer = FileRenderer(parsed, regions[path], state, overrides)
        renderer.plan()
        renderers[path] = renderer
    used = {}
    for renderer in renderers.values():
        used.update(renderer.accessors_used)
    wrappers = analysis.vocab.wrappers.values()
    rendered, index = {}, {}
    for path, renderer in renderers.items():
        rel = str(path.relative_to(root))
        text = renderer.render([w for w in wrappers if w.file == rel], [w for w in used.values() if w.file == rel])
        if text is not None:
            rendered[path] = text
        index.update({id(r): len(outcome.regions) + i for i, r in enumerate(renderer.regions)})
        outcome.regions.extend(region_record(rel, r, renderer) for r in renderer.regions)
    overridden = {r["placement_override"]["section"] for r in outcome.regions if "placement_override" in r}
    outcome.unused_overrides = sorted(set(overrides) - overridden)
    return rendered, index


def _call_sites(root: Path, sources: dict[Path, ParsedFile], analysis: Analysis, regions: dict[Path, list[Region]],
                index: dict[int, int], discovery: Discovery, outcome: Outcome) -> None:
    """Every lock/unlock/trylock call site seen, each in a region or left alone with a reason."""
    rel = {path: str(path.relative_to(root)) for path in sources}
    analysed = [site for path, parsed in sources.items()
                for site in call_sites.analysed_sites(parsed, rel[path], analysis.vocab)]
    sites = call_sites.merge(analysed, discovery.of_kind(*call_sites.KINDS))
    call_sites.attribute(sites, {rel[p]: rs for p, rs in regions.items()}, index, analysis.vocab, root,
                         set(rel.values()), analysis.failures)
    outcome.call_sites = sites


def _lock_entries(table: LockTable, outcome: Outcome, config_path: Path) -> list[lock_config.LockEntry]:
    counts: dict[str, Counter] = {}
    for region in outcome.regions:
        lock_id = table.match_lock(region["lock_expr"], region["file"], region["function"])
        if lock_id is not None:
            counts.setdefault(lock_id, Counter())[region["status"]] += 1
            region["lock_id"] = lock_id
    entries = []
    for entry in table.entries():
        c = counts.get(entry.lock_id, Counter())
        total = c["extracted"] + c["hybrid"]
        entry.description = (f"{entry.description}; {total} region{'s' if total != 1 else ''}, "
                             f"{c['extracted']} extracted")
        entries.append(entry)
    existing = lock_config.read(config_path) if config_path.exists() else []
    return lock_config.merge(entries, existing)
