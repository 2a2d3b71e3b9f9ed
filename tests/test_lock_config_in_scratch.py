"""lock_config.h where rclify reads or writes it in a scratch copy of the tree (issue 36):
  * a rerun reads the tree in a scratch copy: an unreadable entry in the user's lock_config.h is
    one line naming the user's file and line, not the copy's;
  * the compile check's staging copy gets lock_config.h as a new file: a link already under that
    name is replaced, never written through to what it points at."""

from pathlib import Path

from test_bad_input import one_line_error, rclify, snapshot, tree_of

from rclify import cli
from rclify.transform import compile_check


def test_a_bad_entry_in_lock_config_is_named_at_the_users_file_on_a_rerun(tmp_path):
    tree = tree_of(tmp_path)
    assert rclify("transform", tree, "-q").returncode == 0
    config = tree / "lock_config.h"
    lines = config.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if "RCL_LOCK_CONFIG(" in line)
    lines[number - 1] = lines[number - 1].rstrip(")")  # the entry loses its closing parenthesis
    config.write_text("\n".join(lines) + "\n")
    (tree / "added.c").write_text("int rclify_test_added(void) { return 1; }\n")  # so that it runs again
    before = snapshot(tree)
    proc = rclify("transform", tree, "-q")
    one_line_error(proc, f"{config}:{number}: cannot read this lock entry")
    assert "rclify-rerun-" not in proc.stderr
    assert snapshot(tree) == before


def test_an_unknown_algorithm_in_lock_config_is_named_at_the_users_file_on_a_rerun(tmp_path):
    tree = tree_of(tmp_path)
    assert rclify("transform", tree, "-q").returncode == 0
    config = tree / "lock_config.h"
    lines = config.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if "RCL_LOCK_CONFIG(" in line)
    lines[number - 1] = lines[number - 1].replace("RCL_ALG_POSIX", "RCL_ALG_NOSUCH")
    config.write_text("\n".join(lines) + "\n")
    (tree / "added.c").write_text("int rclify_test_added(void) { return 1; }\n")
    proc = rclify("transform", tree, "-q")
    one_line_error(proc, f"{config}:{number}: lock ", "unknown algorithm RCL_ALG_NOSUCH")
    assert "rclify-rerun-" not in proc.stderr


def test_a_link_at_lock_config_in_the_staging_copy_is_not_written_through(tmp_path, monkeypatch):
    """The staging copy is made afresh, so the link is planted there by the step just before the
    write (the API rewrite, which resolves the header's path for its #include)."""
    victim = tmp_path / "victim.h"
    victim.write_bytes(b"/* not rclify's */\n")
    planted = []
    original = compile_check.Staging._rewrite

    def rewrite_then_plant_a_link(self, paths):
        result = original(self, paths)
        if not planted:
            self.config.symlink_to(victim)
            planted.append(self.config)
        return result

    monkeypatch.setattr(compile_check.Staging, "_rewrite", rewrite_then_plant_a_link)
    tree = tree_of(tmp_path)
    assert cli.main(["transform", str(tree), "-q"]) == 0
    assert planted, "the compile check did not stage the tree"
    assert victim.read_bytes() == b"/* not rclify's */\n"
    assert "RCL_LOCK_CONFIG(" in (tree / "lock_config.h").read_text()
