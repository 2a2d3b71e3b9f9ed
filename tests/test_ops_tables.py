"""Lock layers through operations tables (issue 37): the MapReduce library's `lock_acquire(l)` is
`assert(l != NULL); OPS.acquire(l);` with `#define OPS mr_ptmutex_ops` and `.acquire =
ptmutex_acquire`, a static function of pt_mutex.c calling pthread_mutex_lock.  Through a const
table defined once, the call is read as the call of the function its initialiser names
(ops_tables.py, lock_statements/calls.py), so the sections `lock_acquire(q->lock) ...
lock_release(q->lock)` are extracted; through any other table (not const: the library's own,
or defined twice), each call is reported as left alone, `through-pointer` (call_sites.py).
Corpus program and extraction fixture: wrapper_through_const_table."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rclify.transform.analyse import analyse
from rclify.transform.call_sites import LEFT_ALONE

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus" / "wrapper_through_const_table"


def _report(tree: Path, tmp_path: Path) -> tuple[dict, str]:
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "--dry-run", "--report",
                           str(report), "-q", "-j", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(report.read_text()), proc.stdout


def _sites(report: dict) -> dict[tuple[str, int], dict]:
    counts = report["summary"]["call_sites"]
    assert counts["in_extracted_regions"] + counts["in_hybrid_regions"] + sum(counts["left_alone"].values()) \
        == counts["found"] == len(report["call_sites"])
    return {(s["file"], s["line"]): s for s in report["call_sites"]}


def test_sections_through_a_const_table_are_extracted(tmp_path):
    shutil.copytree(CORPUS, tmp_path / "tree")
    report, _ = _report(tmp_path / "tree", tmp_path)
    assert report["summary"]["regions"] == report["summary"]["extracted"] == 2
    assert {"lock_acquire", "lock_release"} <= set(report["summary"]["wrappers"])
    sites = _sites(report)
    assert {sites[("main.c", line)]["status"] for line in (18, 21, 27, 30)} == {"extracted"}
    through = sites[("synch.c", 21)]  # OPS.acquire(l): counted at lock_acquire's calls
    assert (through["via"], through["reason"]) == ("mr_ptmutex_ops.acquire (ptmutex_acquire)", "in-wrapper-function")


def test_calls_through_a_table_that_is_not_const_are_reported(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(CORPUS, tree)
    for name, old, new in (("pt_mutex.c", "const mr_lock_ops", "mr_lock_ops"),
                           ("synch.c", "extern const mr_lock_ops", "extern mr_lock_ops")):
        text = (tree / name).read_text()
        assert old in text
        (tree / name).write_text(text.replace(old, new))
    report, stdout = _report(tree, tmp_path)
    assert report["summary"]["regions"] == 0  # a store elsewhere may change what .acquire calls
    sites = _sites(report)
    for line, kind in ((21, "lock"), (27, "unlock")):
        site = sites[("synch.c", line)]
        function = "lock_acquire" if kind == "lock" else "lock_release"
        assert (site["kind"], site["reason"], site["function"]) == (kind, "through-pointer", function)
    assert "through-pointer 2" in stdout
    assert "through-pointer" in LEFT_ALONE


TABLES_C = r"""
#include <pthread.h>
struct lock_ops { void (*acquire)(void *); void (*release)(void *); int (*busy)(void *); };
static void take(void *l) { pthread_mutex_lock(l); }
static void give(void *l) { pthread_mutex_unlock(l); }
static int counted;
static void take_counted(void *l) { pthread_mutex_lock(l); counted++; }
static const struct lock_ops plain = { take, give, 0 };          /* positional */
static const struct lock_ops working = { .acquire = take_counted, .release = give };
#define OPS plain
void ops_acquire(void *l) { OPS.acquire(l); }
void ops_release(void *l) { OPS.release(l); }
/* the parameter is not the table: no wrapper */
void shadow_acquire(struct lock_ops plain, void *l) { plain.acquire(l); }
/* its function does work under the lock, in another file it could not be copied from: no wrapper */
void work_acquire(void *l) { working.acquire(l); }
"""


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    root = tmp_path_factory.mktemp("tables").resolve()
    (root / "tables.c").write_text(TABLES_C)
    return analyse(root, [root / "tables.c"], lambda path: [], 1, lambda m: None).vocab


def test_a_const_tables_fields_are_its_initialisers_functions(vocab):
    plain = vocab.tables["plain"]
    assert plain.resolvable and plain.fields == {"acquire": "take", "release": "give"}
    acquire, release = vocab.wrappers["ops_acquire"], vocab.wrappers["ops_release"]
    assert (acquire.kind, acquire.expr, acquire.inner) == ("lock", "(l)", None)
    assert (release.kind, release.expr) == ("unlock", "(l)")


def test_a_table_name_declared_again_or_a_function_with_work_is_not_read(vocab):
    assert "take_counted" in vocab.wrappers  # a wrapper, with work after the lock
    assert not {"shadow_acquire", "work_acquire"} & set(vocab.wrappers)


def test_a_table_defined_twice_differently_is_not_read(tmp_path):
    root = tmp_path.resolve()
    common = "#include <pthread.h>\nstruct ops { void (*acquire)(void *); };\n"
    for name, lock in (("a", "l"), ("b", "(char *)l + 8")):
        (root / f"{name}.c").write_text(
            f"{common}static void {name}_take(void *l) {{ pthread_mutex_lock({lock}); }}\n"
            f"const struct ops lock_table = {{ {name}_take }};\n"
            f"void {name}_acquire(void *l) {{ lock_table.acquire(l); }}\n")
    vocab = analyse(root, [root / "a.c", root / "b.c"], lambda path: [], 1, lambda m: None).vocab
    assert vocab.tables["lock_table"].conflicting  # two programs of one tree: which one is not known
    assert not {"a_acquire", "b_acquire"} & set(vocab.wrappers)
