"""A campaign: batches of generated programs, each batch transformed by one rclify run.

For each batch: generate programs (each in its own folder of one tree: the own generator's, Csmith's
or a GCC torture program's, torture.py), build and run each original twice (a program that does
not compile, fails, times out or prints two different things is discarded and counted: a generator
bug; a torture program is run as the suite wrote it, then with its regions inserted, and discarded
when either fails or the two differ), write a compile_commands.json so the analysis uses our
flags, transform the tree once (`rclify transform TREE --output OUT --report r.json`), build each
transformed program against the runtime (`rclify flags`), run it under each algorithm
(`RCLIFY_LOCKS='*=ALG'`, with a timeout: a hang is a finding) and compare stdout and exit status.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz import csmith_locks, generator, torture

REPO = Path(__file__).resolve().parents[2]
ALGORITHMS = ("posix", "rcl", "ccsynch", "mcs", "fc")
CC = ["cc", "-O0", "-g0", "-pthread", "-w", "-Werror=implicit-function-declaration"]


@dataclass
class Options:
    seed: int = 1
    programs: int = 100  # ignored when budget is set: batches run until it is spent
    batch: int = 40
    csmith_share: float = 0.3
    torture_share: float = 0.0  # GCC's torture programs (torture.py); the rest is the own generator's
    algorithms: tuple[str, ...] = ALGORITHMS
    disabled: frozenset[str] = frozenset()
    work: Path = REPO / "tests" / "fuzz" / "work"
    jobs: int = 2
    budget: float | None = None  # seconds
    orig_timeout: float = 2.0
    run_timeout: float = 10.0  # a transformed run: max(this, 20 x the original's time)
    # a run past that limit runs once more with this one: a hang only if it times out again (a
    # million sections on a spinning lock's server, on two loaded cores, can take a minute)
    hang_timeout: float = 120.0
    transform_timeout: float = 900.0
    reduce: bool = False
    reduce_minutes: float = 8.0
    max_reductions: int = 3
    findings: Path = REPO / "tests" / "fuzz" / "findings"
    keep: bool = False  # keep batch folders without differences
    progress: bool = True
    rclify: Path = REPO  # the checkout whose rclify transforms (an older one: does the fuzzer find its bugs?)


@dataclass
class Prog:
    name: str
    source: str  # gen | csmith | torture
    origin: dict  # how to regenerate it
    features: set[str] = field(default_factory=set)
    expected: tuple[str, int] | None = None
    orig_time: float = 0.0
    discarded: str = ""
    regions: int = 0
    extracted: int = 0
    hybrid: Counter = field(default_factory=Counter)
    results: dict = field(default_factory=dict)  # alg -> (stdout, rc) or "timeout"
    differences: list = field(default_factory=list)  # (alg, expected, got)
    build_failed: str = ""
    slow: list = field(default_factory=list)  # algorithms whose first run timed out, the second did not
    pristine: Path | None = None  # a torture program as the suite wrote it: the reference


@dataclass
class Stats:
    programs: int = 0
    kept: int = 0
    discarded: Counter = field(default_factory=Counter)
    regions: int = 0
    extracted: int = 0
    hybrid: Counter = field(default_factory=Counter)
    differences: list = field(default_factory=list)  # dicts
    transform_failures: int = 0
    transformed_build_failures: list = field(default_factory=list)
    runs: int = 0
    slow: Counter = field(default_factory=Counter)  # runs past the first limit, done within hang_timeout
    batches: int = 0
    seconds: float = 0.0
    by_source: Counter = field(default_factory=Counter)
    features: Counter = field(default_factory=Counter)
    findings: list = field(default_factory=list)
    regions_by_source: Counter = field(default_factory=Counter)
    extracted_by_source: Counter = field(default_factory=Counter)
    suite: dict = field(default_factory=dict)  # the torture suite: name, candidates, skipped by reason
    torture_programs: set = field(default_factory=set)  # distinct torture programs drawn

    @property
    def extraction_rate(self) -> float:
        return self.extracted / self.regions if self.regions else 0.0

    def summary(self) -> dict:
        return {"programs": self.programs, "kept": self.kept, "by_source": dict(self.by_source),
                "discarded": dict(self.discarded), "regions": self.regions, "extracted": self.extracted,
                "hybrid": dict(self.hybrid.most_common()), "extraction_rate": round(self.extraction_rate, 4),
                "differences": len(self.differences), "transform_failures": self.transform_failures,
                "transformed_build_failures": len(self.transformed_build_failures), "runs": self.runs,
                "slow_runs": dict(self.slow),
                "batches": self.batches, "seconds": round(self.seconds, 1),
                "features": dict(self.features.most_common()), "findings": self.findings,
                "regions_by_source": dict(self.regions_by_source),
                "extracted_by_source": dict(self.extracted_by_source),
                **({"torture": dict(self.suite, programs=len(self.torture_programs),
                                    variants=self.by_source["torture"])} if self.suite else {})}


def rclify_env(root: Path = REPO) -> dict:
    return dict(os.environ, PYTHONPATH=str(root))


def rclify_flags(root: Path = REPO) -> tuple[list[str], list[str]]:
    def q(arg):
        out = subprocess.run([sys.executable, "-m", "rclify", "flags", arg], cwd=root, capture_output=True,
                             text=True, check=True, env=rclify_env(root))
        return out.stdout.split()
    return q("--cflags"), q("--libs")


def make_program(rng: random.Random, name: str, opts: Options, tree: Path) -> Prog:
    d = tree / name
    d.mkdir(parents=True)
    draw = rng.random()
    if draw < opts.torture_share:
        origin = torture.make_variant(torture.ensure_suite(), random.Random(rng.getrandbits(48)), d,
                                      tree.parent / "pristine" / name)
        p = Prog(name, "torture", origin, {"torture"}, pristine=tree.parent / "pristine" / name)
        p.discarded = origin.get("discarded", "")
        return p
    if draw < opts.torture_share + opts.csmith_share:
        seed, ins = rng.getrandbits(31), rng.getrandbits(48)
        origin = {"csmith_seed": seed, "insert_seed": ins, "options": csmith_locks.CSMITH_OPTIONS}
        path = d / "cs.c"
        path.write_text(csmith_locks.csmith_source(seed))
        n = csmith_locks.insert_locks(path, random.Random(ins))
        return Prog(name, "csmith", origin, {"csmith"} if n else {"csmith-no-region"})
    state = rng.getrandbits(48)
    prog = generator.generate(random.Random(state), opts.disabled)
    for fname, text in prog.files.items():
        (d / fname).write_text(text)
    origin = {"gen_state": state, "disabled": sorted(opts.disabled),
              "scenarios": [[s.kind, s.state] for s in prog.scenarios]}
    return Prog(name, "gen", origin, prog.features)


def build(src: Path, out: Path, extra: list[str] = (), libs: list[str] = ()) -> subprocess.CompletedProcess:
    files = sorted(str(p) for p in src.glob("*.c"))
    return subprocess.run([*CC, f"-I{csmith_locks.CSMITH_INCLUDE}", *extra, *files, "-o", str(out), *libs],
                          capture_output=True, text=True, timeout=300)


def run(binary: Path, timeout: float, env: dict | None = None) -> tuple[str, int] | str:
    try:
        proc = subprocess.run([str(binary)], capture_output=True, timeout=timeout,
                              env=dict(os.environ, **(env or {})), cwd=binary.parent)
    except subprocess.TimeoutExpired:
        return "timeout"
    return proc.stdout.decode("utf-8", "replace"), proc.returncode


def check_original(p: Prog, tree: Path, bins: Path, opts: Options) -> None:
    if p.discarded:  # before it could be built (a torture program libclang cannot parse)
        return
    if p.pristine is not None:
        if not _runs_clean(p, p.pristine, bins / f"{p.name}.pristine", opts, "original"):
            return
        reference = p.expected
        if not _runs_clean(p, tree / p.name, bins / f"{p.name}.orig", opts, "inserted"):
            return
        if p.expected != reference:
            p.discarded = "inserted-differs"
            p.expected = None
        return
    if not _runs_clean(p, tree / p.name, bins / f"{p.name}.orig", opts, "original"):
        return
    first = p.expected
    p.expected = None
    for _ in range(2 if p.source == "gen" else 1):  # threads: a schedule-dependent result shows up
        again = run(bins / f"{p.name}.orig", opts.orig_timeout)
        if again != first:
            p.discarded = "original-nondeterministic"
            return
    p.expected = first


def _runs_clean(p: Prog, src: Path, binary: Path, opts: Options, what: str) -> bool:
    """Builds and runs src once: sets p.expected (and p.orig_time), or p.discarded as `what`-cause."""
    b = build(src, binary)
    if b.returncode != 0:
        p.discarded = f"{what}-does-not-compile"
        p.build_failed = b.stderr[-2000:]
        return False
    t0 = time.monotonic()
    got = run(binary, opts.orig_timeout)
    p.orig_time = time.monotonic() - t0
    if got == "timeout":
        p.discarded = f"{what}-timeout"
        return False
    if got[1] != 0:
        p.discarded = f"{what}-exit-{got[1]}"
        return False
    p.expected = got
    return True


def compile_database(tree: Path, progs: list[Prog]) -> None:
    entries = []
    for p in progs:
        for f in sorted((tree / p.name).glob("*.c")):
            rel = f"{p.name}/{f.name}"
            entries.append({"directory": ".", "file": rel,
                            "arguments": ["cc", "-c", "-pthread", f"-I{csmith_locks.CSMITH_INCLUDE}", rel]})
    (tree / "compile_commands.json").write_text(json.dumps(entries, indent=1))


def transform(tree: Path, out: Path, report: Path, opts: Options) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "--output", str(out),
                               "--report", str(report), "-q", "-j", "1"], cwd=opts.rclify, capture_output=True,
                              text=True, timeout=opts.transform_timeout, env=rclify_env(opts.rclify))
    except subprocess.TimeoutExpired as err:
        return subprocess.CompletedProcess(err.cmd, 124, "", f"transform timed out after {opts.transform_timeout}s")


def check_transformed(p: Prog, out: Path, bins: Path, opts: Options, cflags, libs) -> None:
    binary = bins / f"{p.name}.xf"
    b = build(out / p.name, binary, [f"-I{out}", *cflags], libs)
    if b.returncode != 0:
        p.build_failed = b.stderr[-3000:]
        return
    limit = max(opts.run_timeout, 20 * p.orig_time)
    for alg in opts.algorithms:
        got = run(binary, limit, {"RCLIFY_LOCKS": f"*={alg}"})
        if got == "timeout":
            got = run(binary, max(limit, opts.hang_timeout), {"RCLIFY_LOCKS": f"*={alg}"})
            if got != "timeout":
                p.slow.append(alg)
        p.results[alg] = got
        if got != p.expected:
            p.differences.append((alg, p.expected, got))


def run_batch(index: int, opts: Options, stats: Stats, cflags, libs, log) -> list[Prog]:
    rng = random.Random(opts.seed * 1_000_003 + index)
    bdir = opts.work / f"s{opts.seed}-b{index:04d}"
    shutil.rmtree(bdir, ignore_errors=True)
    tree, out, bins = bdir / "orig", bdir / "xf", bdir / "bin"
    tree.mkdir(parents=True)
    bins.mkdir()
    progs = [make_program(rng, f"p{index:04d}_{i:03d}", opts, tree) for i in range(opts.batch)]
    with ThreadPoolExecutor(opts.jobs) as pool:
        list(pool.map(lambda p: check_original(p, tree, bins, opts), progs))
    kept = [p for p in progs if not p.discarded]
    for p in progs:
        stats.programs += 1
        stats.by_source[p.source] += 1
        if p.source == "torture":
            stats.torture_programs.add(p.origin["torture"])
        if p.discarded:
            stats.discarded[f"{p.source}:{p.discarded}"] += 1
            discard = bdir / "discarded"
            discard.mkdir(exist_ok=True)
            shutil.move(str(tree / p.name), str(discard / p.name))
            if p.source == "gen" and p.discarded != "original-timeout":
                (discard / p.name / "why.txt").write_text(f"{p.discarded}\n{p.build_failed}")
    compile_database(tree, kept)
    t = transform(tree, out, bdir / "report.json", opts)
    if t.returncode != 0:
        stats.transform_failures += 1
        (bdir / "transform.stderr").write_text(t.stderr)
        log(f"  batch {index}: transform failed (rc {t.returncode}): {t.stderr.strip().splitlines()[-1:]}")
        for p in kept:
            stats.discarded[f"{p.source}:transform-failed"] += 1
        return []
    report = json.loads((bdir / "report.json").read_text())
    by_name = {p.name: p for p in kept}
    for region in report["regions"]:
        p = by_name.get(region["file"].split("/")[0])
        if p is None:
            continue
        p.regions += 1
        if region["status"] == "extracted":
            p.extracted += 1
        else:
            p.hybrid[region.get("reason") or "?"] += 1
    with ThreadPoolExecutor(opts.jobs) as pool:
        list(pool.map(lambda p: check_transformed(p, out, bins, opts, cflags, libs), kept))
    for p in kept:
        stats.kept += 1
        stats.regions += p.regions
        stats.extracted += p.extracted
        stats.regions_by_source[p.source] += p.regions
        stats.extracted_by_source[p.source] += p.extracted
        stats.hybrid.update(p.hybrid)
        stats.features.update(p.features)
        stats.runs += len(p.results)
        stats.slow.update(p.slow)
        if p.build_failed:
            stats.transformed_build_failures.append({"program": p.name, "batch": str(bdir), "stderr": p.build_failed[-600:]})
        for alg, expected, got in p.differences:
            stats.differences.append({"program": p.name, "batch": str(bdir), "source": p.source, "algorithm": alg,
                                      "expected": expected, "got": got, "origin": p.origin,
                                      "features": sorted(p.features)})
    stats.batches += 1
    generator_bugs = any(p.source == "gen" and p.discarded and p.discarded != "original-timeout" for p in progs)
    if not opts.keep and not generator_bugs and not any(p.differences or p.build_failed for p in kept):
        shutil.rmtree(bdir, ignore_errors=True)
    return kept


def run_campaign(opts: Options, log=print) -> Stats:
    from tests.fuzz import reduce as reducer

    stats = Stats()
    if opts.torture_share > 0:  # installed and extracted before the first batch (SuiteMissing)
        suite = torture.ensure_suite()
        names, skipped = torture.survey(suite.folder)
        stats.suite = {"suite": suite.name, "candidates": len(names), "skipped": skipped}
    cflags, libs = rclify_flags(opts.rclify)
    opts.work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    index = 0
    reduced_signatures: set[str] = set()  # after narrowing to one scenario
    coarse_signatures: set[str] = set()  # Csmith's: source and class; a torture program's: and its name
    attempts = 0
    while True:
        if opts.budget is not None:
            if time.monotonic() - t0 >= opts.budget:
                break
        elif stats.programs >= opts.programs:
            break
        kept = run_batch(index, opts, stats, cflags, libs, log)
        stats.seconds = time.monotonic() - t0
        diffs = [p for p in kept if p.differences]
        if opts.progress:
            log(f"[{stats.seconds:7.0f}s] batch {index}: {stats.programs} programs, {stats.kept} kept, "
                f"regions {stats.regions}, extracted {stats.extracted} ({stats.extraction_rate:.1%}), "
                f"differences {len(stats.differences)} in {len({(d['batch'], d['program']) for d in stats.differences})} programs, "
                f"transformed build failures {len(stats.transformed_build_failures)}")
        for p in diffs:
            if opts.reduce and len(stats.findings) < opts.max_reductions and attempts < 3 * opts.max_reductions \
                    and reducer.signature(p) not in coarse_signatures:
                attempts += 1
                found = reducer.reduce_difference(p, opts.work / f"s{opts.seed}-b{index:04d}", opts, log,
                                                  reduced_signatures)
                if found:
                    stats.findings.append(found)
                elif p.source != "gen":
                    coarse_signatures.add(reducer.signature(p))
        index += 1
    stats.seconds = time.monotonic() - t0
    return stats
