"""Every lock/unlock/trylock call site rclify sees is reported (rclify/transform/call_sites.py):
part of an extracted region, of a hybrid region, or left alone with a reason; the summary's
counts add up to the sites found.  On tests/fixtures/smpl/tree/ (every lock shape) and on a tree
with the cases only spatch sees."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rclify.transform.call_sites import LEFT_ALONE

ROOT = Path(__file__).resolve().parent.parent
TREE = Path(__file__).parent / "fixtures" / "smpl" / "tree"


def _transform(tree: Path, tmp_path: Path) -> tuple[dict, str]:
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "--dry-run", "--report",
                           str(report), "-q", "-j", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(report.read_text()), proc.stdout


def _adds_up(report: dict) -> dict:
    counts = report["summary"]["call_sites"]
    assert counts["in_extracted_regions"] + counts["in_hybrid_regions"] + sum(counts["left_alone"].values()) \
        == counts["found"] == len(report["call_sites"])
    assert set(counts["left_alone"]) <= set(LEFT_ALONE)
    return counts


@pytest.fixture(scope="module")
def smpl(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("smpl")
    shutil.copytree(TREE, tmp / "tree")
    return _transform(tmp / "tree", tmp)


def test_the_counts_add_up_on_the_shapes_tree(smpl):
    report, stdout = smpl
    counts = _adds_up(report)
    assert counts["found"] >= 30
    line = f"lock call sites: {counts['found']} seen: {counts['in_extracted_regions']} in extracted regions"
    assert line in stdout


@pytest.mark.parametrize("file, line, kind, expected", [
    ("locks.h", 6, "lock", "in-macro-definition"),            # #define LOCK(m) pthread_mutex_lock(&(m))
    ("shapes.c", 19, "lock", "in-wrapper-function"),          # item_lock()'s body
    ("shapes.c", 29, "trylock", "not-a-lock-statement"),      # return pthread_mutex_trylock(...)
    ("shapes.c", 48, "lock", "not-a-lock-statement"),         # LOCK_AND_COUNT: locks and counts
    ("shapes.c", 49, "unlock", "unlock-outside-region"),      # ... so its unlock closes nothing
    ("sub/timed.c", 12, "unlock", "unlock-outside-region"),   # after `if (timedlock(..) != 0) return`
    ("shapes.c", 43, "lock", "extracted"),                    # LOCK(cache_lock);
    ("shapes.c", 54, "lock", "extracted"),                    # item_lock(hv);
    ("broken.c", 13, "lock", "hybrid"),                       # a function with errors
])
def test_each_site_says_what_became_of_it(smpl, file, line, kind, expected):
    report, _ = smpl
    site = next(s for s in report["call_sites"] if (s["file"], s["line"], s["kind"]) == (file, line, kind))
    assert (site.get("reason") or site["status"]) == expected, site


def test_sites_only_spatch_sees(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.c").write_text(
        "#include <pthread.h>\nstatic pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\nint x;\n"
        "void f(void)\n{\n#ifdef NEVER_DEFINED\n    pthread_mutex_lock(&m);\n    x++;\n"
        "    pthread_mutex_unlock(&m);\n#endif\n    pthread_mutex_lock(&m);\n    x--;\n"
        "    pthread_mutex_unlock(&m);\n}\n")
    (tree / "orphan.h").write_text(  # included by no C file
        "#include <pthread.h>\nstatic inline void g(pthread_mutex_t *m) { pthread_mutex_lock(m); "
        "pthread_mutex_unlock(m); }\n")
    report, _ = _transform(tree, tmp_path)
    assert _adds_up(report) == {"found": 6, "in_extracted_regions": 2, "in_hybrid_regions": 0,
                                "left_alone": {"not-analysed": 2, "not-seen-by-libclang": 2}}
