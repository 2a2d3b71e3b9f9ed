"""Reducing a difference to a minimal program with Debian's cvise, and saving it as a finding.

A generated program is first narrowed by construction: it is regenerated with each of its
scenarios alone, and the first that still differs is kept.  Then cvise reduces the file with
`check` below as its interestingness test (run as `python3 -m tests.fuzz.reduce check ...`):

1. the original compiles without the warnings that mean undefined behaviour (implicit
   declarations, missing returns, uninitialised reads, int/pointer conversions) and runs clean
   under AddressSanitizer and UBSan (a reduction must not drift into a program that is wrong
   before rclify touches it), twice with the same output, within its timeout;
2. rclify transforms the one-program tree, the result builds against the runtime, and under the
   algorithm that differed it still differs the same way (a hang stays a hang, a wrong output or
   exit status stays one).

cvise runs under a wall-clock cap (`--reduce-minutes`); whatever it reached is kept.  The finding
folder holds the original program, the reduced one, info.json and reproduce.sh.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STRICT = ["-Werror=implicit-function-declaration", "-Werror=implicit-int", "-Werror=return-type",
          "-Werror=uninitialized", "-Werror=maybe-uninitialized", "-Werror=int-conversion",
          "-Werror=incompatible-pointer-types", "-Werror=return-local-addr", "-Werror=int-to-pointer-cast",
          "-Werror=pointer-to-int-cast", "-Werror=div-by-zero", "-Werror=array-bounds"]
# What a torture program written in old C may have (`main () { ... }`, abort() undeclared): the
# campaign ran it as it is; a reduction may not add more of it than int-conversion catches
OLD_C = {"-Werror=implicit-function-declaration", "-Werror=implicit-int"}


def difference_class(expected, got) -> str:
    if got == "timeout":
        return "hang"
    if isinstance(got, tuple) and got[1] != expected[1]:
        return "exit"
    return "output"


def signature(p) -> str:
    from tests.fuzz.generator import KNOWN_BUGS

    alg, expected, got = p.differences[0]
    cls = difference_class(expected, got)
    if p.source == "gen":
        bugs = sorted(set(p.features) & set(KNOWN_BUGS))
        return f"gen:{cls}:{','.join(bugs) or 'none'}"
    if p.source == "torture":  # the suite's programs are each about one corner: one finding each
        return f"torture:{cls}:{p.origin['torture']}"
    return f"csmith:{cls}"


REPRODUCE = """#!/bin/sh
# Transforms reduced/ (or the folder given) with rclify (this checkout's, or the one RCLIFY_CHECKOUT
# names: the finding was made with info.json's "rclify") and compares it with the original under
# {alg}: prints "DIFFERS: ..." while the bug is there.
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.." && exec python3 -m tests.fuzz.reduce check --dir "$here/${{1:-reduced}}" \\
    --alg {alg} --class {cls} --verbose --rclify "${{RCLIFY_CHECKOUT:-$(pwd)}}"{extra}
"""


def _run(cmd, cwd, timeout, env=None):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None


def check(files: Path, alg: str, cls: str, timeout: float, rclify: Path = REPO,
          old_c: bool = False) -> tuple[bool, str]:
    """Is the program in folder `files` (its .c files) a difference of class cls under alg, once
    transformed by the rclify of checkout `rclify`?  old_c: implicit int and implicit function
    declarations allowed (a torture program's)."""
    from tests.fuzz.campaign import rclify_env, rclify_flags, compile_database, Prog
    from tests.fuzz.csmith_locks import CSMITH_INCLUDE

    with tempfile.TemporaryDirectory(prefix="fz-check-") as tmp:
        tmp = Path(tmp)
        tree = tmp / "orig"
        shutil.copytree(files, tree / "p", ignore=shutil.ignore_patterns("*.orig", "prog*", "*.o"))
        srcs = sorted(str(p) for p in (tree / "p").glob("*.c"))
        inc = f"-I{CSMITH_INCLUDE}"
        strict = [f for f in STRICT if not (old_c and f in OLD_C)]
        b = subprocess.run(["cc", "-O1", "-pthread", "-Wall", inc, *strict, *srcs, "-o", str(tmp / "orig.bin")],
                           capture_output=True)
        if b.returncode != 0:
            return False, "original does not compile strictly"
        b = subprocess.run(["cc", "-O0", "-g", "-pthread", "-w", inc, "-fsanitize=address,undefined",
                            "-fno-sanitize-recover=all", *srcs, "-o", str(tmp / "san.bin")], capture_output=True)
        if b.returncode != 0:
            return False, "sanitizer build failed"
        san = _run([str(tmp / "san.bin")], tmp, timeout)
        if san is None or san.returncode != 0:
            return False, "original unclean under ASan/UBSan"
        if any("pthread_create" in Path(f).read_text(errors="replace") for f in srcs):
            # threads: a reduction must not drift into a racy program (cvise drops lock calls)
            b = subprocess.run(["cc", "-O1", "-g", "-pthread", "-w", inc, "-fsanitize=thread", *srcs,
                                "-o", str(tmp / "tsan.bin")], capture_output=True)
            tsan = _run([str(tmp / "tsan.bin")], tmp, timeout * 5, dict(os.environ, TSAN_OPTIONS="halt_on_error=1"))
            if b.returncode != 0 or tsan is None or tsan.returncode != 0:
                return False, "original racy under TSan"
        first = _run([str(tmp / "orig.bin")], tmp, timeout)
        second = _run([str(tmp / "orig.bin")], tmp, timeout)
        if first is None or second is None or (first.stdout, first.returncode) != (second.stdout, second.returncode):
            return False, "original times out or is nondeterministic"
        expected = (first.stdout, first.returncode)
        compile_database(tree, [Prog("p", "", {})])
        t = _run([sys.executable, "-m", "rclify", "transform", str(tree), "--output", str(tmp / "xf"), "-q",
                  "-j", "1"], rclify, 300, rclify_env(rclify))
        if t is None or t.returncode != 0:
            return False, "transform failed"
        cflags, libs = rclify_flags(rclify)
        xsrcs = sorted(str(p) for p in (tmp / "xf" / "p").glob("*.c"))
        b = subprocess.run(["cc", "-O0", "-pthread", "-w", inc, f"-I{tmp / 'xf'}", *cflags, *xsrcs,
                            "-o", str(tmp / "xf.bin"), *libs], capture_output=True)
        if b.returncode != 0:
            return cls == "build", "transformed build failed"
        got = _run([str(tmp / "xf.bin")], tmp, max(timeout, 5.0), dict(os.environ, RCLIFY_LOCKS=f"*={alg}"))
        got_t = "timeout" if got is None else (got.stdout, got.returncode)
        if got_t == expected:
            return False, "same"
        return difference_class(expected, got_t) == cls, f"differs: {difference_class(expected, got_t)}"


def _narrow_gen(p, src: Path, work: Path, alg: str, cls: str, log) -> tuple[Path, set[str] | None]:
    """The program regenerated with one scenario, the first that still differs, and that
    scenario's features; (src, None) if none differs alone."""
    from tests.fuzz import generator

    for kind, state in p.origin.get("scenarios", []):
        prog = generator.generate(random.Random(0), set(p.origin.get("disabled", [])), only=[(kind, state)])
        d = work / f"one-{kind}-{state}"
        d.mkdir(parents=True, exist_ok=True)
        for name, text in prog.files.items():
            (d / name).write_text(text)
        ok, why = check(d, alg, cls, 5.0, p.rclify)
        if ok:
            log(f"    narrowed to scenario {kind}")
            return d, prog.features
    return src, None


def known_signatures(findings: Path) -> set[str]:
    out = set()
    for info in findings.glob("*/info.json"):
        try:
            out.add(json.loads(info.read_text())["signature"])
        except (OSError, ValueError, KeyError):
            pass
    return out


def reduce_difference(p, bdir: Path, opts, log, seen: set[str]) -> dict | None:
    """Reduces p's first difference into a finding, unless its signature (after narrowing to one
    scenario) is in seen or already among the findings; adds it to seen."""
    from tests.fuzz.generator import KNOWN_BUGS

    alg, expected, got = p.differences[0]
    cls = difference_class(expected, got)
    name = f"{time.strftime('%Y%m%d')}-{p.source}-{cls}-{alg}-s{opts.seed}-{p.name}"
    fdir = opts.findings / name
    if fdir.exists():
        return None
    log(f"  reducing {p.name} ({p.source}, {cls} under {alg})")
    work = bdir / "reduce" / p.name
    work.mkdir(parents=True, exist_ok=True)
    src = bdir / "orig" / p.name
    p.rclify = opts.rclify
    old_c = p.source == "torture"
    ok, why = check(src, alg, cls, opts.orig_timeout + 3, opts.rclify, old_c)
    if not ok:
        log(f"    not reproduced by the interestingness test ({why}): kept unreduced")
    start, features = _narrow_gen(p, src, work, alg, cls, log) if (ok and p.source == "gen") else (src, None)
    bugs = sorted((features or set()) & set(KNOWN_BUGS))  # a known bug's shape: one finding for it
    sig = signature(p) if features is None else \
        f"gen:{cls}:{','.join(bugs)}" if bugs else f"gen:{cls}:none:{'/'.join(sorted(features))}"
    if sig in seen or sig in known_signatures(opts.findings):
        log(f"    signature {sig} already reduced: skipped")
        seen.add(sig)
        return None
    seen.add(sig)
    fdir.mkdir(parents=True)
    shutil.copytree(src, fdir / "original", ignore=shutil.ignore_patterns("*.bin"))
    reduced = fdir / "reduced"
    shutil.copytree(start, reduced)
    target = {"csmith": "cs.c", "torture": p.origin.get("torture")}.get(p.source, "main.c")
    seconds = 0.0
    if ok:
        script = fdir / "interesting.sh"
        script.write_text(f"""#!/bin/sh
# cvise's interestingness test: the program in the current folder still differs ({cls} under {alg})
here=$(pwd)
for f in {' '.join(x.name for x in sorted(reduced.glob('*.c')) if x.name != target)}; do cp "{reduced}/$f" "$here/" 2>/dev/null; done
cd {REPO} && exec env PYTHONPATH={REPO} {sys.executable} -m tests.fuzz.reduce check --dir "$here" --alg {alg} --class {cls} --rclify {opts.rclify}{' --old-c' if old_c else ''}
""")
        script.chmod(0o755)
        t0 = time.monotonic()
        try:
            subprocess.run(["cvise", "--n", "1", "--timeout", "120", "--tidy", str(script), target],
                           cwd=reduced, capture_output=True, timeout=opts.reduce_minutes * 60)
        except subprocess.TimeoutExpired:
            log(f"    cvise stopped at the {opts.reduce_minutes} min cap")
        seconds = time.monotonic() - t0
        ok_after, why_after = check(reduced, alg, cls, opts.orig_timeout + 3, opts.rclify, old_c)
        log(f"    {fdir}: reduced in {seconds:.0f}s to {len((reduced / target).read_text().splitlines())} lines; "
            f"still differs: {ok_after} ({why_after})")
    info = {"program": p.name, "source": p.source, "batch": str(bdir), "seed": opts.seed, "algorithm": alg,
            "class": cls, "expected": expected, "got": got, "all_differences": [list(d[:1]) + [d[2]] for d in p.differences],
            "origin": p.origin, "features": sorted(p.features), "signature": sig,
            "narrowed_features": sorted(features) if features is not None else None,
            "reproduced_by_check": ok, "reduce_seconds": round(seconds, 1),
            "rclify": str(opts.rclify)}
    (fdir / "info.json").write_text(json.dumps(info, indent=1, default=str))
    (fdir / "reproduce.sh").write_text(REPRODUCE.format(alg=alg, cls=cls, extra=" --old-c" if old_c else ""))
    (fdir / "reproduce.sh").chmod(0o755)
    return {"finding": str(fdir.relative_to(REPO)), "signature": info["signature"], "class": cls, "algorithm": alg}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.reduce")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="interestingness test: exit 0 when the program still differs")
    c.add_argument("--dir", type=Path, required=True)
    c.add_argument("--alg", required=True)
    c.add_argument("--class", dest="cls", required=True)
    c.add_argument("--timeout", type=float, default=5.0)
    c.add_argument("--verbose", action="store_true")
    c.add_argument("--rclify", type=Path, default=REPO, help="the checkout whose rclify transforms")
    c.add_argument("--old-c", action="store_true", help="implicit int and function declarations allowed (torture)")
    args = ap.parse_args(argv)
    ok, why = check(args.dir.resolve(), args.alg, args.cls, args.timeout, args.rclify.resolve(), args.old_c)
    if args.verbose:
        print(("DIFFERS: " if ok else "no difference: ") + why)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
