"""The tree as a transaction (rclify/transform/apply.py): a transform killed at any write, by
SIGKILL or SIGTERM, leaves a tree that the next `rclify transform` completes and the next
`rclify revert` restores byte for byte; never anything between.  Two runs at once: one refuses.

The transform is killed from inside (a wrapper around the CLI counts the writes of the commit step
and signals itself at the Nth): every write is a kill point, not a sample of them.  The analysis
is computed once and reused by the killed runs (it writes nothing into the tree); the runs that
recover are the plain CLI."""

import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rclify import runtime_build

UNIT = """#include <pthread.h>
static pthread_mutex_t lock_{n} = PTHREAD_MUTEX_INITIALIZER;
static long count_{n};
void bump_{n}(int k)
{{
    pthread_mutex_lock(&lock_{n});
    count_{n} += k;
    pthread_mutex_unlock(&lock_{n});
}}
long total_{n}(void) {{ return count_{n}; }}
"""
UNITS = 4
MAIN = """#include <pthread.h>
#include <stdio.h>
""" + "".join(f"void bump_{n}(int);\nlong total_{n}(void);\n" for n in range(UNITS)) + """
static void *work(void *arg)
{
    for (int i = 0; i < 1000; i++) {
""" + "".join(f"        bump_{n}(1);\n" for n in range(UNITS)) + """    }
    return arg;
}
int main(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("%ld\\n", """ + " + ".join(f"total_{n}()" for n in range(UNITS)) + """);
    return 0;
}
"""

# Runs `rclify transform TREE -q`, signalling itself (SIG) at the Nth write of the commit step;
# with N = 0 it prints how many writes there were.  ANALYSIS: a pickle of the analysis's Outcome.
WRAPPER = textwrap.dedent("""
    import os, pickle, shutil, signal, sys
    from pathlib import Path
    from rclify import cli
    from rclify.transform import apply, transform_tree
    n, sig, analysis, tree = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    seen = [0]
    committing = [False]

    def point():
        if committing[0]:
            seen[0] += 1
            if seen[0] == n:
                os.kill(os.getpid(), sig)

    def counted(f):
        def wrapper(*a, **k):
            point()
            result = f(*a, **k)
            return result
        return wrapper

    os.replace = counted(os.replace)
    os.fsync = counted(os.fsync)
    os.unlink = counted(os.unlink)
    shutil.rmtree = counted(shutil.rmtree)
    Path.write_bytes = counted(Path.write_bytes)
    Path.write_text = counted(Path.write_text)
    Path.mkdir = counted(Path.mkdir)
    commit = apply.commit

    def counted_commit(*a, **k):
        committing[0] = True
        try:
            return commit(*a, **k)
        finally:
            committing[0] = False
    apply.commit = counted_commit
    analyse = transform_tree.analyse_tree

    def cached(source, *a, **k):
        if analysis.exists():
            outcome = pickle.loads(analysis.read_bytes())
            outcome.root = source.root
            return outcome
        outcome = analyse(source, *a, **k)
        analysis.write_bytes(pickle.dumps(outcome))
        return outcome
    transform_tree.analyse_tree = cached
    code = cli.main(["transform", tree, "-q", "-j", "1"])
    if n == 0:
        print("writes", seen[0])
    sys.exit(code)
""")


def snapshot(tree: Path) -> dict[str, bytes | None]:
    """Every file's bytes, every directory (None): an empty .rclify/ left behind is a difference."""
    return {str(p.relative_to(tree)): p.read_bytes() if p.is_file() else None for p in sorted(tree.rglob("*"))}


def rclify(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rclify", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def make_tree(path: Path) -> Path:
    path.mkdir()
    for n in range(UNITS):
        (path / f"unit{n}.c").write_text(UNIT.format(n=n))
    (path / "main.c").write_text(MAIN)
    return path


def builds_and_runs(tree: Path) -> None:
    runtime_build.build_runtime()
    sources = sorted(str(p) for p in tree.glob("*.c"))
    proc = subprocess.run(["gcc", "-O1", "-pthread", *runtime_build.cflags(), f"-I{tree}", *sources,
                           "-o", str(tree.parent / "prog"), *runtime_build.libs()], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = subprocess.run([str(tree.parent / "prog")], capture_output=True, text=True, timeout=60,
                         env={"RCLIFY_LOCKS": "*=rcl"})
    assert out.stdout == f"{4 * 1000 * UNITS}\n"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The original tree, the tree a clean transform leaves, and the analysis to reuse."""
    base = tmp_path_factory.mktemp("crash")
    tree = make_tree(base / "tree")
    original = snapshot(tree)
    analysis = base / "analysis.pickle"
    wrapper = base / "wrapper.py"
    wrapper.write_text(WRAPPER)
    proc = subprocess.run([sys.executable, str(wrapper), "0", "0", str(analysis), str(tree)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    writes = int(proc.stdout.split("writes")[-1])
    transformed = snapshot(tree)
    assert sum(b"rclify_cs_" in transformed[f"unit{n}.c"] for n in range(UNITS)) == UNITS
    builds_and_runs(tree)
    return {"original": original, "transformed": transformed, "analysis": analysis, "wrapper": wrapper,
            "writes": writes, "base": base}


def reverted(tree: Path, reference: dict) -> bool:
    """The original tree byte for byte; lock_config.h, which a revert keeps by design (it holds the
    user's choices: docs/transform.md), may stay as the transform wrote it."""
    now = snapshot(tree)
    if "lock_config.h" in now and "lock_config.h" not in reference["original"]:
        if now.pop("lock_config.h") != reference["transformed"]["lock_config.h"]:
            return False
    return now == reference["original"]


def transformed_equal(tree: Path, expected: dict[str, bytes]) -> bool:
    """The tree as a clean transform leaves it (.rclify/'s records included)."""
    return snapshot(tree) == expected


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_at_every_write_then_transform_or_revert(reference, sig, tmp_path):
    writes = reference["writes"]
    assert writes >= 20, writes  # records, journal, 5 files and lock_config.h, the swap
    outcomes = {"rolled back": 0, "completed": 0, "nothing to recover": 0}
    for n in range(1, writes + 1):
        tree = make_tree(tmp_path / f"t{n}")
        proc = subprocess.run([sys.executable, str(reference["wrapper"]), str(n), str(int(sig)),
                               str(reference["analysis"]), str(tree)], capture_output=True, text=True, timeout=600)
        if sig == signal.SIGKILL:
            assert proc.returncode == -signal.SIGKILL, (n, proc.returncode, proc.stderr)
        else:  # SIGTERM is handled as SIGINT is: rolled back at once (or, once every file is written,
            # delivered when the records are in: the transform complete), one line, exit 143
            assert proc.returncode == 128 + signal.SIGTERM, (n, proc.returncode, proc.stderr)
            assert proc.stderr.strip().splitlines()[-1] == "rclify transform: interrupted (SIGTERM)"
            assert snapshot(tree) in (reference["original"], reference["transformed"]), n
        # the next run repairs it: revert for odd kill points, transform for even ones
        untouched = snapshot(tree) == reference["original"]  # killed before its first write
        if n % 2:
            after = rclify("revert", tree)
            if untouched:
                assert after.returncode == 2 and "not transformed by rclify" in after.stderr, (n, after.stderr)
            else:
                assert after.returncode == 0, (n, after.stderr)
            assert reverted(tree, reference), n
        else:
            after = rclify("transform", tree, "-q", "-j", "1")
            assert after.returncode == 0, (n, after.stderr)
            assert transformed_equal(tree, reference["transformed"]), n
            back = rclify("revert", tree)
            assert back.returncode == 0, (n, back.stderr)
            assert reverted(tree, reference), n
        lines = [line for line in after.stderr.splitlines() if line.startswith("rclify: ")]
        assert len(lines) <= 1, after.stderr
        key = ("rolled back" if lines and "rolled back" in lines[0] else
               "completed" if lines and ("completed" in lines[0] or "finished" in lines[0]) else "nothing to recover")
        outcomes[key] += 1
        shutil.rmtree(tree)
    print(f"{signal.Signals(sig).name}: {writes} kill points: {outcomes}")
    if sig == signal.SIGKILL:  # both ways out were taken
        assert outcomes["rolled back"] and outcomes["completed"], outcomes


def test_a_second_run_at_once_is_refused(tmp_path):
    tree = make_tree(tmp_path / "tree")
    original = snapshot(tree)
    from rclify.transform import apply

    with apply.exclusive(tree.resolve()):  # as a running transform holds it
        for command in (["transform", tree, "-q"], ["revert", tree]):
            proc = rclify(*command)
            assert proc.returncode == 2
            assert proc.stderr.count("\n") == 1 and "another rclify is transforming or reverting" in proc.stderr
    assert snapshot(tree) == original


def test_two_transforms_started_together(tmp_path):
    tree = make_tree(tmp_path / "tree")
    original = snapshot(tree)
    procs = [subprocess.Popen([sys.executable, "-m", "rclify", "transform", str(tree), "-q", "-j", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    # one transforms; the other is refused, or (if it started after the first ended) finds nothing to do
    assert codes[0] == 0 and codes[1] in (0, 2), results
    revert = rclify("revert", tree)
    assert revert.returncode == 0, revert.stderr
    now = snapshot(tree)
    now.pop("lock_config.h")  # kept by revert
    assert now == original
