"""What the transform leaves alone (rclify/transform/exclusions.py, issue 37): vendored directories
by default (deps/*, third_party/*, a nested project with its own build and licence, a git
submodule), each listed in the summary with why, its lock calls reported as left alone; the
opt-out (--include-vendored); paths the user names (--exclude, rclify.toml's [transform] exclude)."""

import json
import subprocess
import sys
from pathlib import Path

from rclify.ctext.source_tree import SourceTree, source_files
from rclify.transform import exclusions

# a lock layer of a vendored allocator: three lock calls, one region (je_work)
VENDORED_C = """#include <pthread.h>
#include "vendored.h"
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
void je_lock(void) { pthread_mutex_lock(&m); }
int je_work(int x) { pthread_mutex_lock(&m); x++; pthread_mutex_unlock(&m); return x; }
"""

# the program's own file: includes a vendored header (the compile check's copy must hold it)
PROGRAM_C = """#include <pthread.h>
#include "vendored.h"
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int count;
int program_work(void)
{
    pthread_mutex_lock(&lock);
    count += VENDORED_STEP;
    pthread_mutex_unlock(&lock);
    return count;
}
"""


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    files = {
        "src/program.c": PROGRAM_C,
        "deps/jemalloc/src/mutex.c": VENDORED_C,  # under deps/, and a nested project
        "deps/jemalloc/COPYING": "licence\n",
        "deps/jemalloc/configure.ac": "AC_INIT\n",
        "deps/jemalloc/include/vendored.h": "#define VENDORED_STEP 1\nint je_work(int x);\n",
        "third_party/lz/lz.c": VENDORED_C.replace("je_", "lz_"),  # under third_party/ only
        "libs/own/own.c": VENDORED_C.replace("je_", "own_"),  # a build file, no licence: the program's
        "libs/own/Makefile": "all:\n",
        "modules/sub/sub.c": VENDORED_C.replace("je_", "sub_"),  # a git submodule
        ".gitmodules": '[submodule "sub"]\n\tpath = modules/sub\n\turl = https://example.org/sub.git\n',
    }
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    return tree


def _transform(tree: Path, *args: str, expect: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "-q", "-j", "2",
                           "--report", str(tree.parent / "report.json"), *args],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == expect, (proc.stdout, proc.stderr)
    return proc


def test_vendored_directories_are_found_outermost_with_why(tmp_path):
    tree = _tree(tmp_path)
    found = {e.path: e.why for e in exclusions.vendored(tree)}
    assert found == {
        "deps/jemalloc": "vendored: own build and licence; --include-vendored to transform it",
        "third_party/lz": "vendored: under third_party/; --include-vendored to transform it",
        "modules/sub": "vendored: a git submodule; --include-vendored to transform it",
    }


def test_vendored_code_is_left_alone_listed_and_its_lock_calls_reported(tmp_path):
    tree = _tree(tmp_path)
    before = {p: p.read_text() for p in tree.rglob("*.c")}
    proc = _transform(tree)
    assert "  left alone: deps/jemalloc (vendored: own build and licence; --include-vendored to transform it)" \
        in proc.stdout, proc.stdout
    assert "  left alone: third_party/lz (vendored: under third_party/;" in proc.stdout
    assert "  left alone: modules/sub (vendored: a git submodule;" in proc.stdout
    changed = {str(p.relative_to(tree)) for p, text in before.items() if p.read_text() != text}
    assert changed == {"src/program.c", "libs/own/own.c"}, changed
    assert "rclify_cs_program_work" in (tree / "src/program.c").read_text()  # its vendored header was staged
    report = json.loads((tmp_path / "report.json").read_text())
    assert set(report["left_alone"]) == {"deps/jemalloc", "third_party/lz", "modules/sub"}
    excluded = [s for s in report["call_sites"] if s.get("reason") == "excluded"]
    assert sorted((s["file"], s["line"], s["kind"]) for s in excluded if s["file"].startswith("deps/")) == [
        ("deps/jemalloc/src/mutex.c", 4, "lock"), ("deps/jemalloc/src/mutex.c", 5, "lock"),
        ("deps/jemalloc/src/mutex.c", 5, "unlock")]
    assert len(excluded) == 9
    assert report["summary"]["call_sites"]["left_alone"]["excluded"] == 9
    config = (tree / "lock_config.h").read_text()
    assert "program.c" in config and "mutex.c" not in config and "lz.c" not in config, config


def test_include_vendored_transforms_them_too(tmp_path):
    tree = _tree(tmp_path)
    proc = _transform(tree, "--include-vendored")
    assert "  left alone: " not in proc.stdout, proc.stdout
    assert "rclify_cs_je_work" in (tree / "deps/jemalloc/src/mutex.c").read_text()
    assert "rclify_cs_lz_work" in (tree / "third_party/lz/lz.c").read_text()


def test_paths_named_on_the_command_line_and_in_rclify_toml_are_left_alone(tmp_path):
    tree = _tree(tmp_path)
    (tree / "rclify.toml").write_text('[transform]\nexclude = ["libs/own/own.c"]\ninclude_vendored = true\n')
    proc = _transform(tree, "--exclude", "third_party")
    assert "  left alone: libs/own/own.c (rclify.toml exclude)" in proc.stdout, proc.stdout
    assert "  left alone: third_party (--exclude)" in proc.stdout
    assert (tree / "libs/own/own.c").read_text() == VENDORED_C.replace("je_", "own_")
    assert (tree / "third_party/lz/lz.c").read_text() == VENDORED_C.replace("je_", "lz_")
    assert "rclify_cs_je_work" in (tree / "deps/jemalloc/src/mutex.c").read_text()  # include_vendored


def test_an_excluded_path_that_is_not_in_the_tree_is_one_line(tmp_path):
    tree = _tree(tmp_path)
    proc = _transform(tree, "--exclude", "dpes/jemalloc", expect=2)
    assert proc.stderr.count("\n") == 1 and "--exclude dpes/jemalloc: no such file or directory" in proc.stderr, \
        proc.stderr
    assert (tree / "src/program.c").read_text() == PROGRAM_C


def test_split_keeps_the_trees_other_files_in_order(tmp_path):
    tree = _tree(tmp_path)
    source = SourceTree(tree, source_files(tree))
    kept, left = exclusions.split(source, exclusions.find(tree, ["libs"], False))
    assert [source.rel(p) for p in kept.files] == ["src/program.c"]
    assert left == {"deps/jemalloc": ["deps/jemalloc/include/vendored.h", "deps/jemalloc/src/mutex.c"],
                    "libs": ["libs/own/own.c"], "modules/sub": ["modules/sub/sub.c"],
                    "third_party/lz": ["third_party/lz/lz.c"]}
