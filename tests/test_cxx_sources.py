"""C++ files in a C tree: listed, rewritten onto the runtime, compile-checked with g++ before and
after, and never left in a state where a file that compiled no longer does
(rclify/transform/cxx.py, includes.py, verify.py)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rclify import runtime_build
from rclify.transform.cxx import config_refs_for_cxx
from rclify.ctext.includes import IncludeGraph, left_unchanged_group, shared_lock_names

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT / "corpus" / "cxx_shared_header"

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

# a C++ ABI check on the shared header: true of pthread_mutex_t, false of rcl_mutex_t; the file
# itself names no pthread API, so the rewrite leaves it as it is and only its header changes
LAYOUT_CHECK = """#include "shared.h"
static_assert(sizeof(((struct ledger *)0)->lock) == 40, "ledger.lock is a glibc pthread_mutex_t");
long ledger_total_unlocked() { return ledger.total; }
"""

# an ABI assumption in a file that also locks: true of pthread_mutex_t, false of rcl_mutex_t, so once
# ledger.lock is an rcl_mutex_t this does not compile (a pthread function used as a value, or a
# timed lock, would: the rewrite handles both)
ABI_ASSUMPTION = """
extern "C" int ledger_lock_checked()
{
    static_assert(sizeof(ledger.lock) == 40, "ledger.lock is a glibc pthread_mutex_t");
    int rc = pthread_mutex_lock(&ledger.lock);
    if (rc == 0)
        pthread_mutex_unlock(&ledger.lock);
    return rc;
}
"""

OTHER_C = """#include <pthread.h>
static pthread_mutex_t other_lock = PTHREAD_MUTEX_INITIALIZER;
static long other_count;
void other_bump(void)
{
    pthread_mutex_lock(&other_lock);
    other_count++;
    pthread_mutex_unlock(&other_lock);
}
"""


def _transform(tree: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    report = tree.parent / f"{tree.name}.json"
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "--report", str(report),
                           "-q", "-j", "2", *extra], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads(report.read_text())


def _compiles(tree: Path, name: str) -> subprocess.CompletedProcess:
    compiler = "gcc" if name.endswith(".c") else "g++"
    return subprocess.run([compiler, "-fsyntax-only", *runtime_build.cflags(), name],
                          cwd=tree, capture_output=True, text=True, timeout=120)


def _tree(tmp_path: Path, extra: dict[str, str]) -> tuple[Path, dict[str, bytes]]:
    tree = tmp_path / "tree"
    shutil.copytree(SHARED, tree)
    for name, text in extra.items():
        path = tree / name
        path.write_text(path.read_text() + text if path.exists() else text)
    return tree, {p.name: p.read_bytes() for p in tree.iterdir() if p.is_file()}


def test_config_ref_becomes_a_lambda_in_cxx(tmp_path):
    text = "void f(rcl_mutex_t *m) { rcl_mutex_init(m, NULL, RCL_CONFIG_REF(RCLIFY_LOCK_x)); } // RCL_CONFIG_REF(y)\n"
    out = config_refs_for_cxx(text)
    assert "RCL_CONFIG_REF(RCLIFY_LOCK_x)" not in out and out.endswith("// RCL_CONFIG_REF(y)\n")
    source = tmp_path / "f.cpp"
    source.write_text('#include "rclify.h"\n#define RCLIFY_LOCK_x RCL_LOCK_CONFIG("f.cpp:x", RCL_ALG_RCL, 1, -1)\n' + out)
    assert _compiles(tmp_path, "f.cpp").returncode == 0


def test_shared_lock_names():
    text = """#include <pthread.h>
struct ledger { pthread_mutex_t lock; long total; };
typedef struct { pthread_cond_t c; } waiter_t;
waiter_t w1;
extern pthread_mutex_t registry_lock;
static pthread_mutex_t private_lock = PTHREAD_MUTEX_INITIALIZER;
void lock_it(pthread_mutex_t *param) { pthread_mutex_lock(param); }
int unrelated(int x) { return x; }
namespace app { pthread_mutex_t tally_lock; }
extern "C" { pthread_cond_t cv; }
"""
    # objects and functions: a type's name (ledger, waiter_t) has no linkage
    assert shared_lock_names(text) == {"w1", "registry_lock", "lock_it", "tally_lock", "cv"}


def test_left_unchanged_group_follows_includes_and_names(tmp_path):
    files = {
        "a.h": '#include "b.h"\n',
        "b.h": "struct s { pthread_mutex_t m; };\n",
        "c.h": "int nothing;\n",
        "app.cpp": '#include "a.h"\n',
        "core.c": '#include "b.h"\n#include "c.h"\n',
        "lone.c": "extern pthread_mutex_t big_lock;\n",
        "defs.c": "pthread_mutex_t big_lock;\n",
        "other.c": '#include "c.h"\n',
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    graph = IncludeGraph.by_path(tmp_path, [tmp_path / n for n in files], [])
    assert graph.closure("app.cpp") == {"a.h", "b.h"}
    assert graph.includers("b.h") == {"a.h", "app.cpp", "core.c"}
    changed = set(files) - {"c.h"}
    group = left_unchanged_group({"app.cpp": "broken"}, changed, graph, files)
    assert set(group) == {"app.cpp", "a.h", "b.h", "core.c"}  # c.h did not change; other.c shares nothing
    assert set(left_unchanged_group({"lone.c": "broken"}, changed, graph, files)) == {"lone.c", "defs.c"}


def test_cxx_file_that_breaks_leaves_its_group_unchanged(tmp_path):
    """app.cpp cannot compile once shared.h holds an rcl_mutex_t: shared.h, core.c and app.cpp stay
    as they were (core.c's calls on the header's lock are not rewritten while its type stays
    pthread_mutex_t); other.c, which shares nothing with them, is transformed."""
    tree, before = _tree(tmp_path, {"app.cpp": ABI_ASSUMPTION, "other.c": OTHER_C})
    _, report = _transform(tree)
    unchanged = report["files_left_unchanged"]
    assert set(unchanged) == {"app.cpp", "shared.h", "core.c"}, unchanged
    assert "does not compile" in unchanged["app.cpp"]
    for name in ("app.cpp", "shared.h", "core.c"):
        assert (tree / name).read_bytes() == before[name], f"{name} changed"
    assert "rclify_cs_" in (tree / "other.c").read_text()
    for name in ("app.cpp", "core.c", "other.c"):
        assert _compiles(tree, name).returncode == 0, f"{name}: {_compiles(tree, name).stderr}"
    core = [r for r in report["regions"] if r["file"] == "core.c"]
    assert core and all(r["status"] == "hybrid" and r["reason"] == "file-left-unchanged" for r in core)
    cxx = [r for r in report["regions"] if r["file"] == "app.cpp"]
    assert cxx and all(r["reason"] == "file-left-unchanged" and r["other_reasons"] == ["c++-source"] for r in cxx)


def test_unchanged_cxx_file_is_checked_when_its_header_changes(tmp_path):
    """layout.cpp names no pthread API (the rewrite leaves its text alone) but includes shared.h:
    it is compiled after the header's rewrite, fails its static_assert, and its group stays."""
    tree, before = _tree(tmp_path, {"layout.cpp": LAYOUT_CHECK})
    _, report = _transform(tree)
    unchanged = report["files_left_unchanged"]
    assert "static assertion failed" in unchanged.get("layout.cpp", ""), unchanged
    assert {"shared.h", "core.c", "app.cpp"} <= set(unchanged)
    assert all((tree / n).read_bytes() == before[n] for n in before)


def test_cxx_files_are_listed_rewritten_and_revertible(tmp_path):
    tree, before = _tree(tmp_path, {})
    (tree / "guard.hpp").write_text("#pragma once\n#include <pthread.h>\nstruct Guard {\n"
                                    "    pthread_mutex_t *m;\n"
                                    "    explicit Guard(pthread_mutex_t *m) : m(m) { pthread_mutex_lock(m); }\n"
                                    "    ~Guard() { pthread_mutex_unlock(m); }\n};\n")
    (tree / "peek.cc").write_text('#include "guard.hpp"\n#include "shared.h"\n'
                                  "long peek() { Guard g(&ledger.lock); return ledger.total; }\n")
    before = {p.name: p.read_bytes() for p in tree.iterdir() if p.is_file()}
    _, report = _transform(tree)
    assert report["summary"]["files"] == 5 and not report["files_left_unchanged"]
    assert {"app.cpp", "guard.hpp", "shared.h", "core.c"} <= set(json.loads((tree / ".rclify/state.json").read_text())["files"])
    cxx = {(r["file"], r["function"]) for r in report["regions"] if r.get("reason") == "c++-source"}
    assert ("guard.hpp", "Guard::Guard") in cxx and ("app.cpp", "LedgerGuard::LedgerGuard") in cxx
    assert ("app.cpp", "wait_for_c_workers") in cxx
    assert "rcl_mutex_lock(m)" in (tree / "guard.hpp").read_text()
    for name in ("app.cpp", "peek.cc", "core.c"):
        assert _compiles(tree, name).returncode == 0, f"{name}: {_compiles(tree, name).stderr}"
    proc = subprocess.run([sys.executable, "-m", "rclify", "revert", str(tree)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert all((tree / n).read_bytes() == data for n, data in before.items())


def test_c_file_that_breaks_keeps_its_header_unchanged(tmp_path):
    """slow.c locks the shared header's lock and asserts its glibc size: gcc refuses it once the lock
    is an rcl_mutex_t, so the header's group stays unchanged."""
    slow = '#include "shared.h"\nint ledger_take(void)\n' \
           '{ _Static_assert(sizeof(ledger.lock) == 40, "glibc layout"); return pthread_mutex_lock(&ledger.lock); }\n'
    tree, before = _tree(tmp_path, {"slow.c": slow})
    _, report = _transform(tree)
    unchanged = report["files_left_unchanged"]
    assert "does not compile" in unchanged.get("slow.c", ""), unchanged
    assert {"shared.h", "core.c", "app.cpp"} <= set(unchanged)
    assert all((tree / n).read_bytes() == before[n] for n in before)


def test_cxx_regions_through_a_macro_and_a_wrapper(tmp_path):
    """Lock calls reached through the tree's lock macro and its lock wrapper are listed with the
    lock they take (matched to its lock_config.h entry) and how they were reached."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "w.h").write_text(
        '#include <pthread.h>\n#define LOCK(m) pthread_mutex_lock(&(m))\n#define UNLOCK(m) pthread_mutex_unlock(&(m))\n'
        '#ifdef __cplusplus\nextern "C" {\n#endif\nvoid item_lock(unsigned hv);\nvoid item_unlock(unsigned hv);\n'
        "#ifdef __cplusplus\n}\n#endif\n")
    (tree / "w.c").write_text(
        '#include "w.h"\nstatic pthread_mutex_t item_locks[16];\n'
        "void item_lock(unsigned hv) { pthread_mutex_lock(&item_locks[hv % 16]); }\n"
        "void item_unlock(unsigned hv) { pthread_mutex_unlock(&item_locks[hv % 16]); }\n"
        "void init(void) { for (int i = 0; i < 16; i++) pthread_mutex_init(&item_locks[i], NULL); }\n")
    (tree / "u.cpp").write_text(
        '#include "w.h"\nstatic pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\nstatic int x;\n'
        "void a() { LOCK(m); x++; UNLOCK(m); }\n"
        "void b(unsigned hv) { item_lock(hv); x++; item_unlock(hv); }\n")
    _, report = _transform(tree, "--dry-run")
    found = {(r["line"], r["function"], r["lock"], r["via"], r.get("lock_id")) for r in report["regions"]
             if r["file"] == "u.cpp" and r["reason"] == "c++-source"}
    assert found == {(4, "a", "&m", "LOCK", "u.cpp:m"),
                     (5, "b", "&item_locks[(hv) % 16]", "item_lock", "w.c:item_locks[]")}, found
