"""The transform command's contract around the files it touches: dry run, revert, edits kept,
idempotence, bad input."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def rclify(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "rclify", *map(str, args)], capture_output=True, text=True,
                          timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def snapshot(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in tree.rglob("*") if p.is_file()}


@pytest.fixture
def tree(tmp_path):
    dest = tmp_path / "prog"
    shutil.copytree(CORPUS / "wrapper_item_lock", dest)
    return dest


def test_dry_run_prints_a_diff_and_changes_nothing(tree):
    before = snapshot(tree)
    out = rclify("transform", tree, "--dry-run", "-q").stdout
    assert "+static int rclify_cs_" in out and "+#define RCLIFY_LOCK_" in out
    assert snapshot(tree) == before


def test_revert_restores_every_file_and_keeps_hand_edits_of_the_config(tree):
    before = snapshot(tree)
    rclify("transform", tree, "-q")
    config = tree / "lock_config.h"
    assert snapshot(tree) != before and config.exists()
    config.write_text(config.read_text().replace("RCL_ALG_POSIX, 0, -1", "RCL_ALG_RCL, 1, -1"))
    rclify("revert", tree)
    after = snapshot(tree)
    assert {k: v for k, v in after.items() if k != "lock_config.h"} == before
    rclify("transform", tree, "-q")
    assert "RCL_ALG_RCL, 1, -1" in config.read_text(), "hand edit lost across revert + transform"


def test_output_directory_leaves_the_source_alone(tree, tmp_path):
    before = snapshot(tree)
    rclify("transform", tree, "--output", tmp_path / "out", "-q")
    assert snapshot(tree) == before
    assert "RCL_EXECUTE" in (tmp_path / "out" / "items.c").read_text()


def test_bad_input_is_one_clear_line(tmp_path):
    proc = rclify("transform", tmp_path / "missing", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"rclify transform: error: {tmp_path / 'missing'}: not a directory"]
    proc = rclify("revert", tmp_path, check=False)
    assert proc.returncode == 2 and "not transformed by rclify" in proc.stderr


def test_a_tree_with_generated_code_but_no_state_is_refused(tree):
    rclify("transform", tree, "-q")
    shutil.rmtree(tree / ".rclify")
    proc = rclify("transform", tree, check=False)
    assert proc.returncode == 2 and "already contains rclify-generated code" in proc.stderr


def test_a_file_spatch_cannot_parse_is_reported(tmp_path):
    dest = tmp_path / "vm"
    shutil.copytree(CORPUS / "refuse_computed_goto", dest)
    out = rclify("transform", dest, "-q").stdout
    assert "spatch could not parse all of vm.c" in out
    assert "hybrid: vm.c:" in out and "computed-goto" in out


def test_a_region_whose_code_does_not_compile_costs_only_itself(tmp_path):
    """A `register` local written in a section: its address cannot be taken, so that region's
    extracted code does not compile; it stays hybrid, the file's other regions are extracted
    (the whole file used to be left hybrid), the program still runs, and lock_config.h counts
    what was written (it counted regions the compile check left hybrid as extracted)."""
    dest = tmp_path / "acc"
    dest.mkdir()
    (dest / "acc.c").write_text(
        "#include <pthread.h>\n#include <stdio.h>\nstatic pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n"
        "static int n;\n"
        "void f(void) { pthread_mutex_lock(&m); n++; pthread_mutex_unlock(&m); }\n"
        "int g(void) { register int x = 1; pthread_mutex_lock(&m); x += n; pthread_mutex_unlock(&m);\n"
        "  pthread_mutex_lock(&m); n++; pthread_mutex_unlock(&m); return x; }\n"
        "void k(void) { pthread_mutex_lock(&m); n += 2; pthread_mutex_unlock(&m); }\n"
        "int main(void) { f(); k(); printf(\"%d\\n\", g()); return 0; }\n")
    out = rclify("transform", dest, "-q", "--report", tmp_path / "report.json").stdout
    assert "4 regions: 3 extracted" in out and "hybrid: acc.c:6 in g(): generated-code-does-not-compile" in out
    assert "acc.c:m -- m; static initializer at acc.c:3; 4 regions, 3 extracted" in (dest / "lock_config.h").read_text()
    # g()'s second section is now its first: the report names the function written
    regions = {r["line"]: r for r in json.loads((tmp_path / "report.json").read_text())["regions"]}
    assert "function_extracted" not in regions[6] and regions[7]["function_extracted"] == "rclify_cs_g_1"
    assert "static int rclify_cs_g_1(" in (dest / "acc.c").read_text()
    flags = subprocess.run([sys.executable, "-m", "rclify", "flags", "--cflags", "--libs"], capture_output=True,
                           text=True, check=True).stdout.split()
    subprocess.run(["cc", "-pthread", "acc.c", "-o", "acc", *flags], cwd=dest, check=True, timeout=120)
    for algorithm in ("rcl", "ccsynch"):
        run = subprocess.run([str(dest / "acc")], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, RCLIFY_LOCKS=f"*={algorithm}"))
        assert run.returncode == 0 and run.stdout == "4\n", run.stderr  # g's x: 1 + n (3)


def test_an_unwritable_tree_is_one_line_and_left_as_it_was(tree):
    if os.geteuid() == 0:
        # root ignores permission bits: make the write fail another way (a directory in the way)
        (tree / ".rclify").write_text("not a directory")
    else:
        tree.chmod(0o555)
    before = snapshot(tree)
    proc = rclify("transform", tree, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "nothing was changed" in proc.stderr and "Traceback" not in proc.stderr
    assert snapshot(tree) == before


@pytest.mark.parametrize("option,where", [
    ("--report", "/nonexistent/r.json"),
    ("--config", "/nonexistent/dir/x.h"),
    ("--report", "."),  # a directory
    ("--output", "prog/out"),  # inside the tree
    ("--output", "prog/counter.c/out"),  # below a file
])
def test_bad_output_paths_are_refused_before_any_work(tree, option, where):
    where = where if where.startswith("/") else str(tree.parent / where).replace("counter.c", "items.c")
    before = snapshot(tree)
    proc = rclify("transform", tree, option, where, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rclify transform: error: {option} "), proc.stderr
    assert snapshot(tree) == before


@pytest.mark.parametrize("command", ["transform", "check"])
@pytest.mark.parametrize("jobs", ["0", "-3", "many"])
def test_jobs_must_be_a_positive_integer(tree, command, jobs):
    before = snapshot(tree)
    proc = rclify(command, tree, "-j", jobs, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(f"rclify {command}: error: argument -j/--jobs: ")
    assert jobs in proc.stderr.splitlines()[-1] and "Traceback" not in proc.stderr
    assert snapshot(tree) == before


def test_output_into_a_reader_that_stops_is_no_traceback(tmp_path):
    """`rclify transform --dry-run TREE | head -1`: the diff is longer than one line."""
    tree = tmp_path / "tree"
    shutil.copytree(CORPUS / "line_numbers_preserved", tree)
    proc = subprocess.run(f"{sys.executable} -m rclify transform {tree} --dry-run -q | head -1",
                          shell=True, capture_output=True, text=True, timeout=300)
    assert proc.stdout.startswith("--- a/lines.c")
    assert "Traceback" not in proc.stderr, proc.stderr


def test_configure_templates_are_left_alone(tree):
    """gnulib's lib/pthread.in.h (lbzip2): a template with @GUARD_PREFIX@ that configure turns into
    the header the build uses; rewriting it (as C it is not) gave invalid C nothing compiled."""
    template = tree / "lib" / "pthread.in.h"
    template.parent.mkdir()
    template.write_text("#ifndef _@GUARD_PREFIX@_PTHREAD_H_\n#define _@GUARD_PREFIX@_PTHREAD_H_\n"
                        "# define PTHREAD_MUTEX_INITIALIZER { 0 }\n"
                        "_GL_FUNCDECL_RPL (pthread_mutex_lock, int, (pthread_mutex_t *mutex));\n"
                        "int pthread_mutex_lock (pthread_mutex_t *mutex) { return 0; }\n#endif\n")
    before = template.read_bytes()
    rclify("transform", tree, "-q")
    assert template.read_bytes() == before
    assert "RCL_EXECUTE" in (tree / "items.c").read_text()  # the program itself was transformed


SAVED = b"/* saved while rclify ran */\n"


def _saving_meanwhile(analyse, name):
    """analyse_tree, then a save of `name` (an editor, a build) before the transform writes; in the
    tree itself (rerun.py analyses a staging copy, shown as the tree)."""
    def analyse_then_save(source, *args, **kwargs):
        outcome = analyse(source, *args, **kwargs)
        path = Path(kwargs.get("shown") or source.root) / name
        path.write_bytes(path.read_bytes() + SAVED)
        return outcome
    return analyse_then_save


def _refused_when_saved(tree: Path, name: str, module, monkeypatch, capsys) -> None:
    """A transform during which `name` is saved: refused, the tree as it was plus that save."""
    from rclify import cli
    before, analyse = snapshot(tree), module.analyse_tree
    monkeypatch.setattr(module, "analyse_tree", _saving_meanwhile(analyse, name))
    assert cli.main(["transform", str(tree), "-q"]) == 2
    assert f"{name} changed while rclify was transforming it: nothing was changed" in capsys.readouterr().err
    assert snapshot(tree) == {**before, name: before[name] + SAVED}
    monkeypatch.setattr(module, "analyse_tree", analyse)


def test_a_file_saved_during_the_transform_keeps_its_edit(tree, monkeypatch, capsys):
    """Its new text derives from what was read: writing it would lose the edit, so nothing is written."""
    from rclify import cli
    from rclify.transform import pipeline, transform_tree
    _refused_when_saved(tree, "items.c", transform_tree, monkeypatch, capsys)
    assert not (tree / ".rclify").exists()
    assert cli.main(["transform", str(tree), "-q"]) == 0  # run again: transformed, the edit in
    transformed = (tree / "items.c").read_bytes()
    assert transformed.endswith(SAVED) and b"RCL_EXECUTE" in transformed
    # a transformed tree taken up again (rerun.py) keeps an edit made meanwhile too
    (tree / "items.c").write_bytes(transformed + b"void item_touch(uint32_t key)\n{\n    item_lock(hash(key));\n"
                                   b"    value[key]++;\n    item_unlock(hash(key));\n}\n")  # a region to extract
    _refused_when_saved(tree, "items.c", pipeline, monkeypatch, capsys)
    # lock_config.h, hand-editable, whose entries the transform merges with what it read
    _refused_when_saved(tree, "lock_config.h", pipeline, monkeypatch, capsys)
    assert cli.main(["transform", str(tree), "-q"]) == 0  # and then, with the saves in, it goes through
    assert b"item_touch" in (tree / "items.c").read_bytes()
