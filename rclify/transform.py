"""`rclify transform`: the pipeline, in the order data flows.

  discover  (spatch)   lock calls, macros, wrappers, inits, condvars       rclify.discover
  analyse   (libclang) the vocabulary, then every function's regions     rclify.analyse
  plan + render        extractions: context structs, functions, calls    rclify.extract
  rewrite   (spatch)   types, initializers, init/destroy, condvars, rest  rclify.api_rewrite
  apply                every changed file replaced atomically, backups    (here)
  report               summary on stdout, JSON with --report              (here)

Nothing is written until every step has succeeded; a file that a parser cannot read is left as
it was and reported.
"""

import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rclify import __version__, atomic_file, cparse, lock_config
from rclify.analyse import add_macros, add_wrappers, regions_of, thread_bound_functions
from rclify.errors import ParseError, ToolMissingError, UsageError
from rclify.extract import FileExtractor
from rclify.lockops import Vocabulary
from rclify.regions import REASONS, Region

STATE_DIR = ".rclify"
STATE_FILE = "state.json"
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


@dataclass
class Outcome:
    root: Path
    changed: dict[str, str] = field(default_factory=dict)  # relative path -> new text
    regions: list[dict] = field(default_factory=list)
    locks: list[lock_config.LockEntry] = field(default_factory=list)
    wrappers: list[dict] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)  # parse errors (file: first error)
    unchanged: dict[str, str] = field(default_factory=dict)  # files left as they were, and why
    stubbed_headers: list[str] = field(default_factory=list)
    api_errors: list[str] = field(default_factory=list)  # calls the runtime has no equivalent for
    api_notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    files_scanned: int = 0
    already_transformed: bool = False

    def summary(self) -> dict:
        extracted = [r for r in self.regions if r["status"] == "extracted"]
        hybrid = Counter(r["reason"] for r in self.regions if r["status"] == "hybrid")
        return {
            "files": self.files_scanned,
            "files_changed": len(self.changed),
            "regions": len(self.regions),
            "extracted": len(extracted),
            "extracted_thread_bound": sum(bool(r.get("runs_on_caller_thread")) for r in extracted),
            "hybrid": dict(sorted(hybrid.items())),
            "locks": len(self.locks),
            "wrappers": [w["name"] for w in self.wrappers],
            "parse_failures": len(self.failures),
            "files_left_unchanged": len(self.unchanged),
        }


class Progress:
    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.started = time.monotonic()

    def __call__(self, message: str) -> None:
        if not self.quiet:
            print(f"[{time.monotonic() - self.started:6.1f}s] {message}", file=sys.stderr, flush=True)


# -- entry point ------------------------------------------------------------------------------

def run(options: Options) -> Outcome:
    progress = Progress(options.quiet)
    root = _prepare_tree(options)
    config_path = (options.config or root / "lock_config.h").resolve()
    outcome = Outcome(root)
    state = _read_state(root)
    if state is not None:
        outcome.already_transformed = True
        progress(f"{root} was transformed by rclify {state['version']}: nothing to do")
        return outcome
    _refuse_foreign_transformation(root)
    _check_spatch()

    files = _source_files(root)
    outcome.files_scanned = len(files)
    progress(f"{len(files)} C files under {root}")

    started = time.monotonic()
    from rclify import discover as discover_step

    discovery = discover_step.discover(root, files, jobs=options.jobs, progress=progress)
    outcome.failures.update(discovery.failures)
    outcome.timings["spatch_discover_s"] = time.monotonic() - started
    progress(f"discovered {len(discovery.sites)} lock sites, {len(discovery.wrappers)} wrappers "
             f"({outcome.timings['spatch_discover_s']:.1f}s)")

    started = time.monotonic()
    defines = [*_build_defines(root, progress), *options.cflags]  # as the tree's build compiles it
    parsed, vocab = _analyse(root, files, [f"-I{root}", *defines], options, outcome, progress)
    outcome.timings["libclang_s"] = time.monotonic() - started

    started = time.monotonic()
    rendered = _extract(root, parsed, vocab, outcome)
    outcome.timings["extract_s"] = time.monotonic() - started
    progress(f"extracted {sum(r['status'] == 'extracted' for r in outcome.regions)} of "
             f"{len(outcome.regions)} regions ({outcome.timings['extract_s']:.1f}s)")

    outcome.locks = _lock_entries(root, discovery, outcome, config_path)
    started = time.monotonic()
    outcome.changed = _rewrite_and_verify(root, files, rendered, discovery, config_path, defines, options,
                                          outcome, progress)
    outcome.timings["spatch_rewrite_and_verify_s"] = time.monotonic() - started
    progress(f"rewrote the lock API in {len(outcome.changed)} files "
             f"({outcome.timings['spatch_rewrite_and_verify_s']:.1f}s)")
    if options.dry_run:
        _print_diff(root, outcome, config_path)
    else:
        _apply(root, outcome, config_path)
    outcome.timings["total_s"] = time.monotonic() - progress.started
    if options.report:
        options.report.write_text(json.dumps(report_json(outcome), indent=2) + "\n")
    return outcome


def report_json(outcome: Outcome) -> dict:
    return {
        "rclify": __version__,
        "root": str(outcome.root),
        "summary": outcome.summary(),
        "regions": outcome.regions,
        "locks": [vars(e) | {"macro": e.macro} for e in outcome.locks],
        "wrappers": outcome.wrappers,
        "parse_failures": outcome.failures,
        "files_left_unchanged": outcome.unchanged,
        "stubbed_headers": outcome.stubbed_headers,
        "api_errors": outcome.api_errors,
        "api_notes": outcome.api_notes,
        "timings": outcome.timings,
    }


# -- steps ------------------------------------------------------------------------------------

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


def _read_state(root: Path) -> dict | None:
    path = root / STATE_DIR / STATE_FILE
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise UsageError(f"{path}: unreadable rclify state ({err}); run `rclify revert` or remove it") from None
    if state.get("version") != __version__:
        raise UsageError(
            f"{root} was transformed by rclify {state.get('version')}, this is {__version__}: "
            f"run `rclify revert {root}` with that version first"
        )
    return state


def _refuse_foreign_transformation(root: Path) -> None:
    for path in _source_files(root):
        if b"rclify_cs_" in path.read_bytes():
            raise UsageError(f"{path} already contains rclify-generated code but {root} has no "
                             f"{STATE_DIR}/{STATE_FILE}: transformed by another version or copied by hand")


def _check_spatch() -> None:
    if shutil.which("spatch") is None:
        raise ToolMissingError("spatch not found: apt-get install coccinelle (version 1.1.x)")
    out = subprocess.run(["spatch", "--version"], capture_output=True, text=True).stdout
    if "version 1.1." not in out:
        first = out.splitlines()[0] if out else "unknown"
        raise ToolMissingError(f"spatch 1.1.x is required, found: {first}")


def _source_files(root: Path) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES) and name != "lock_config.h":
                files.append(Path(dirpath) / name)
    return files


def _mentions(path: Path, names: set[str]) -> bool:
    text = path.read_bytes()
    return any(name.encode() in text for name in names)


def _analyse(root, files, flags, options, outcome, progress):
    """libclang over the C files that lock: vocabulary first (macros, wrappers), then regions."""
    vocab = Vocabulary()
    # files spatch could not parse are analysed too, for the report; they are left unchanged
    candidates = [f for f in files if f.suffix == ".c"]
    lockers = [f for f in candidates if _mentions(f, {"pthread_mutex"})]
    stub_dir = Path(tempfile.mkdtemp(prefix="rclify-stubs-"))
    parsed: dict[Path, cparse.ParsedFile] = {}

    def parse_one(path: Path):
        try:
            return path, cparse.parse(path, flags, stub_dir)
        except ParseError as err:
            return path, err

    def parse_all(paths):
        with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
            for i, (path, result) in enumerate(pool.map(parse_one, paths), 1):
                rel = str(path.relative_to(root))
                if isinstance(result, ParseError):
                    outcome.failures[rel] = str(result)
                    continue
                parsed[path] = result
                if i % 10 == 0 or i == len(paths):
                    progress(f"libclang: parsed {i}/{len(paths)} files")

    # Files that lock only through the program's macros or wrappers are found as the vocabulary
    # grows (thread.c's item_lock is written with memcached.h's mutex_lock): parse to a fixpoint.
    todo = lockers
    while todo:
        parse_all(todo)
        for path in todo:
            if path in parsed:
                add_macros(parsed[path], root, vocab)
        for path in todo:
            if path in parsed:
                add_wrappers(parsed[path], root, vocab)
        names = set(vocab.macros) | set(vocab.wrappers)
        todo = [f for f in candidates if f not in parsed and _mentions(f, names)]
    for pf in parsed.values():
        outcome.stubbed_headers.extend(h for h in pf.stubbed if h not in outcome.stubbed_headers)
    if outcome.stubbed_headers:
        progress(f"headers not found, parsed as empty: {', '.join(outcome.stubbed_headers[:5])}"
                 f"{' ...' if len(outcome.stubbed_headers) > 5 else ''}")
    outcome.wrappers = [
        {"name": w.name, "kind": w.kind, "file": w.file, "lock": w.expr, "params": list(w.params)}
        for w in sorted(vocab.wrappers.values(), key=lambda w: w.name)
    ]
    return parsed, vocab


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


def _extract(root: Path, parsed: dict[Path, cparse.ParsedFile], vocab: Vocabulary, outcome: Outcome) -> dict[Path, str]:
    extractors = {}
    bound = thread_bound_functions(list(parsed.values()))
    for path, pf in parsed.items():
        regions = [r for fr in regions_of(pf, vocab) for r in fr.regions]
        extractor = FileExtractor(pf, regions, bound)
        extractor.plan()
        extractors[path] = extractor
    used = {}
    for extractor in extractors.values():
        used.update(extractor.accessors_used)
    rendered = {}
    for path, extractor in extractors.items():
        rel = str(path.relative_to(root))
        text = extractor.render([w for w in vocab.wrappers.values() if w.file == rel],
                                [w for w in used.values() if w.file == rel])
        if text is not None:
            rendered[path] = text
        outcome.regions.extend(_region_record(rel, r, extractor) for r in extractor.regions)
    return rendered


def _region_record(rel: str, region: Region, extractor: FileExtractor) -> dict:
    record = {
        "file": rel, "line": region.line, "function": region.function.spelling,
        "lock": region.lock.mutex, "via": region.lock.via, "kind": region.lock.kind,
        "lock_expr": region.lock.wrapper_expr or region.lock.mutex,
    }
    if region.extractable:
        extraction = next(e for e in extractor.extractions if e.region is region)
        record |= {"status": "extracted", "function_extracted": extraction.fn_name,
                   "runs_on_caller_thread": extraction.local,
                   "exits": len(region.exits), "context": [c.name for c in extraction.captures],
                   "hoisted": extraction.hoisted}
    else:
        reason, line = region.problems[0]
        record |= {"status": "hybrid", "reason": reason, "reason_line": line,
                   "why": REASONS.get(reason, reason),
                   "other_reasons": sorted({r for r, _ in region.problems[1:]} - {reason})}
    return record


def _rewrite_and_verify(root, files, rendered, discovery, config_path, defines, options, outcome, progress):
    """The API rewrite over the extracted text, in a staging copy of the tree, then a compile
    check of every changed C file against the staged headers.  A file whose new text does not
    compile while its original does is retried with the API rewrite alone (its regions left
    hybrid), then left unchanged; both are reported.  Returns {relative path: new text}."""
    staging = Path(tempfile.mkdtemp(prefix="rclify-stage-"))
    try:
        for path in files:
            target = staging / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            if path in rendered:
                target.write_text(rendered[path], encoding="utf-8", errors="surrogateescape")
            else:
                shutil.copy2(path, target)
        staged_config = staging / config_path.relative_to(root) if config_path.is_relative_to(root) else config_path
        new_texts = _api_rewrite(staging, [staging / p.relative_to(root) for p in files], discovery,
                                 staged_config, options, outcome)
        changed = {}
        for path in files:
            rel = str(path.relative_to(root))
            text = new_texts.get(staging / rel)
            if text is None:
                text = (staging / rel).read_text(encoding="utf-8", errors="surrogateescape")
            if text != path.read_text(encoding="utf-8", errors="surrogateescape"):
                changed[rel] = text
                (staging / rel).write_text(text, encoding="utf-8", errors="surrogateescape")
        staged_config.write_text(lock_config.render(outcome.locks))
        _verify(root, staging, changed, rendered, discovery, staged_config, defines, options, outcome, progress)
        return changed
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _api_rewrite(tree: Path, paths: list[Path], discovery, config: Path, options, outcome):
    from rclify import api_rewrite, lock_sites

    table = lock_sites.build_lock_table(discovery)
    result = api_rewrite.rewrite_api(tree, paths, table.sites, config, options.jobs)
    outcome.api_errors += [e for e in result.errors if e not in outcome.api_errors]
    outcome.api_notes += [n for n in result.notes if n not in outcome.api_notes]
    for rel, message in result.failures.items():
        outcome.failures.setdefault(rel, message)
    return result


def _compiles(tree: Path, rel: str, defines: list[str]) -> tuple[bool, str]:
    """gcc -fsyntax-only on tree/rel, with the tree's headers and the runtime's."""
    from rclify.runtime_build import cflags

    proc = subprocess.run(["gcc", "-fsyntax-only", "-std=gnu11", "-w", f"-I{tree}", *defines, *cflags(), rel],
                          cwd=tree, capture_output=True, text=True)
    first = next((line for line in proc.stderr.splitlines() if "error" in line), proc.stderr[:300])
    return proc.returncode == 0, first


def _verify(root, staging, changed, rendered, discovery, staged_config, defines, options, outcome, progress):
    c_files = sorted(rel for rel in changed if rel.endswith(".c"))
    progress(f"checking that {len(c_files)} changed C files still compile (gcc -fsyntax-only)")
    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        results = dict(zip(c_files, pool.map(lambda rel: _compiles(staging, rel, defines), c_files)))
    for rel, (ok, error) in results.items():
        if ok or not _compiles(root, rel, defines)[0]:
            continue  # compiles, or the original does not compile standalone either: nothing to compare
        original = (root / rel).read_text(encoding="utf-8", errors="surrogateescape")
        retried = False
        if root / rel in rendered:  # without the extraction: the API rewrite of the original text
            (staging / rel).write_text(original, encoding="utf-8", errors="surrogateescape")
            text = _api_rewrite(staging, [staging / rel], discovery, staged_config, options, outcome).get(staging / rel)
            if text is not None:
                (staging / rel).write_text(text, encoding="utf-8", errors="surrogateescape")
                if _compiles(staging, rel, defines)[0]:
                    changed[rel] = text
                    retried = True
                    for region in outcome.regions:
                        if region["file"] == rel and region["status"] == "extracted":
                            region.update(status="hybrid", reason="generated-code-does-not-compile",
                                          reason_line=region["line"], why=error, other_reasons=[])
                    progress(f"warning: {rel}: extracted code does not compile ({error}); regions left hybrid")
        if not retried:
            changed.pop(rel, None)
            (staging / rel).write_text(original, encoding="utf-8", errors="surrogateescape")
            outcome.unchanged[rel] = error
            progress(f"warning: {rel}: transformed code does not compile ({error}); file left unchanged")


def _lock_entries(root: Path, discovery, outcome: Outcome, config_path: Path) -> list[lock_config.LockEntry]:
    from rclify import lock_sites

    table = lock_sites.build_lock_table(discovery)
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


def _print_diff(root: Path, outcome: Outcome, config_path: Path) -> None:
    for rel, text in sorted(outcome.changed.items()):
        original = (root / rel).read_text(encoding="utf-8", errors="surrogateescape")
        sys.stdout.writelines(difflib.unified_diff(
            original.splitlines(keepends=True), text.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"))
    old = config_path.read_text() if config_path.exists() else ""
    name = os.path.relpath(config_path, root)
    sys.stdout.writelines(difflib.unified_diff(
        old.splitlines(keepends=True), lock_config.render(outcome.locks).splitlines(keepends=True),
        f"a/{name}", f"b/{name}"))


def _apply(root: Path, outcome: Outcome, config_path: Path) -> None:
    """Backs up and replaces every changed file; on any failure puts back what was written."""
    state_dir = root / STATE_DIR
    backup_dir = state_dir / "backup"
    written: list[Path] = []
    created_config = not config_path.exists()
    try:
        state_dir.mkdir(exist_ok=True)
        for rel, text in sorted(outcome.changed.items()):
            path = root / rel
            backup = backup_dir / rel
            backup.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, backup)
            _atomic_write(path, text)
            written.append(path)
        if not created_config:
            backup = backup_dir / os.path.relpath(config_path, root)
            backup.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(config_path, backup)
        lock_config.write(config_path, outcome.locks)
        state = {"version": __version__, "files": sorted(outcome.changed), "config": str(config_path),
                 "created_config": created_config}
        _atomic_write(state_dir / STATE_FILE, json.dumps(state, indent=2) + "\n")
    except BaseException as err:
        for path in written:
            shutil.copy2(backup_dir / path.relative_to(root), path)
        if created_config and config_path.exists():
            config_path.unlink()
        shutil.rmtree(state_dir, ignore_errors=True)
        if isinstance(err, OSError):
            raise UsageError(f"cannot write {err.filename or root}: {err.strerror}; nothing was changed") from None
        raise


def _atomic_write(path: Path, text: str) -> None:
    atomic_file.write_text(path, text, tmp_name=f".{path.name}.rclify-tmp", keep_mode=True)


def revert(src: Path) -> list[str]:
    """Restores every file `transform` changed; returns their relative paths."""
    root = src.resolve()
    state_path = root / STATE_DIR / STATE_FILE
    if not state_path.exists():
        raise UsageError(f"{src}: not transformed by rclify (no {STATE_DIR}/{STATE_FILE})")
    state = json.loads(state_path.read_text())
    backup_dir = root / STATE_DIR / "backup"
    restored = []
    for rel in state["files"]:
        backup = backup_dir / rel
        if not backup.exists():
            raise UsageError(f"backup of {rel} is missing from {backup_dir}: cannot revert safely")
    for rel in state["files"]:
        _atomic_write(root / rel, (backup_dir / rel).read_text(encoding="utf-8", errors="surrogateescape"))
        restored.append(rel)
    # lock_config.h stays: it holds the user's choices, and the next transform merges them
    shutil.rmtree(root / STATE_DIR)
    return restored
