"""Hostile and faulty inputs a tree can carry (a repository or a tarball holds `.rclify/`,
`lock_config.h` and `rclify.toml` like any file): one line, exit 2, nothing changed in the tree,
and nothing outside it touched: a sentinel folder beside the tree is compared byte for byte."""

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from test_bad_input import one_line_error, rclify, snapshot, tree_of


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder outside the tree, with what recovery and the records would touch: next/, old/,
    journal.tmp/ with files in them, and a file a link could point at."""
    folder = tmp_path / "outside"
    for sub in ("next/written", "old", "journal.tmp/pre", "kept"):
        (folder / sub).mkdir(parents=True)
        (folder / sub / "precious.txt").write_bytes(b"not rclify's: " + sub.encode() + b"\n")
    (folder / "victim.h").write_bytes(b"/* a header outside the tree */\n#define KEEP 1\n")
    return folder


def transformed(tmp_path: Path) -> Path:
    tree = tree_of(tmp_path)
    proc = rclify("transform", tree, "-q")
    assert proc.returncode == 0, proc.stderr
    return tree


def refused_everywhere(tmp_path: Path, tree: Path, commands: list[list], *words: str) -> None:
    """Each command: one line naming words, exit 2; the tree and everything beside it (the
    sentinel folder) byte for byte as before."""
    before = snapshot(tmp_path)
    for command in commands:
        one_line_error(rclify(*command), *words)
        assert snapshot(tmp_path) == before, command


def craft_journal(tree: Path, entries: list[dict], pre: dict[str, bytes] | None = None, text: str | None = None):
    journal = tree / ".rclify" / "journal"
    (journal / "pre").mkdir(parents=True)
    for name, data in (pre or {}).items():
        (journal / "pre" / name).write_bytes(data)
    record = {"phase": "writing", "entries": entries, "made_state_dir": False}
    (journal / "journal.json").write_text(json.dumps(record) if text is None else text)


@pytest.mark.parametrize("path", ["ABSOLUTE", "../outside/victim.h", "sub/../../outside/victim.h"])
def test_a_journal_naming_a_path_outside_the_tree_is_refused(tmp_path, outside, path):
    tree = transformed(tmp_path)
    target = str(outside / "victim.h") if path == "ABSOLUTE" else path
    # a rollback would write pre/0 over the target, and delete the second entry's file
    craft_journal(tree, [{"path": target, "pre": "0", "mode": 0o644}, {"path": "../outside/kept/precious.txt",
                                                                        "pre": None}], {"0": b"overwritten\n"})
    refused_everywhere(tmp_path, tree, [["revert", tree], ["revert", "--force", tree], ["transform", tree, "-q"]],
                       "journal.json", "outside")


def test_a_journal_whose_saved_copy_lies_outside_it_is_refused(tmp_path, outside):
    tree = transformed(tmp_path)
    craft_journal(tree, [{"path": "main.c", "pre": "../../../outside/victim.h", "mode": 0o644}])
    refused_everywhere(tmp_path, tree, [["revert", tree], ["transform", tree, "-q"]], "journal.json",
                       "not a journal rclify wrote")


@pytest.mark.parametrize("text", ['{"phase": "wri', "", "[]", '{"phase": "writing", "entries": [{"path": 7}]}',
                                  '{"phase": "done", "entries": []}'])
def test_a_truncated_or_malformed_journal_is_one_line(tmp_path, outside, text):
    tree = transformed(tmp_path)
    craft_journal(tree, [], text=text)
    refused_everywhere(tmp_path, tree, [["revert", tree], ["transform", tree, "-q"]], "journal")
    refused_everywhere(tmp_path, tree, [["transform", tree, "--dry-run"]], "interrupted")


def test_a_journal_entry_that_is_now_a_link_is_refused(tmp_path, outside):
    tree = transformed(tmp_path)
    (tree / "main.c").unlink()
    (tree / "main.c").symlink_to(outside / "victim.h")
    craft_journal(tree, [{"path": "main.c", "pre": "0", "mode": 0o644}], {"0": b"int main(void) { return 0; }\n"})
    refused_everywhere(tmp_path, tree, [["revert", tree], ["transform", tree, "-q"]], "symbolic link")


@pytest.mark.parametrize("transformed_first", [False, True])
def test_rclify_directory_as_a_link_to_an_outside_folder_is_refused(tmp_path, outside, transformed_first):
    tree = transformed(tmp_path) if transformed_first else tree_of(tmp_path)
    if transformed_first:  # its records moved out, the link in their place: recovery would swap and delete there
        for record in ("state.json", "backup", "written"):
            os.rename(tree / ".rclify" / record, outside / record)
        (tree / ".rclify").rmdir()

    (tree / ".rclify").symlink_to(outside)
    commands = [["transform", tree, "-q"], ["transform", tree, "--dry-run"], ["revert", tree],
                ["check", tree, "--build", "true", "--test", "true"]]
    refused_everywhere(tmp_path, tree, commands, ".rclify", "symbolic link")


@pytest.mark.parametrize("inner", ["next", "journal.tmp", "backup/main.c", "old"])
def test_a_link_inside_the_rclify_directory_is_refused(tmp_path, outside, inner):
    tree = transformed(tmp_path)
    link = tree / ".rclify" / inner
    if link.is_dir():
        os.rename(link, tmp_path / "moved")
    elif link.exists():
        link.unlink()
    link.symlink_to(outside / "victim.h" if inner.endswith(".c") else outside / "next")
    refused_everywhere(tmp_path, tree, [["transform", tree, "-q"], ["revert", tree], ["revert", "--force", tree]],
                       "symbolic link")


def test_lock_config_as_a_link_to_an_outside_file_is_refused(tmp_path, outside):
    tree = tree_of(tmp_path)
    (tree / "lock_config.h").symlink_to(outside / "victim.h")
    refused_everywhere(tmp_path, tree, [["transform", tree, "-q"], ["transform", tree, "--dry-run"],
                                        ["transform", tree, "-q", "--config", tree / "lock_config.h"]],
                       "lock_config.h", "symbolic link")


def test_lock_config_made_a_link_after_the_transform_is_refused(tmp_path, outside):
    tree = transformed(tmp_path)
    (tree / "lock_config.h").unlink()
    (tree / "lock_config.h").symlink_to(outside / "victim.h")
    with open(tree / "main.c", "a") as source:  # an edit, so that the transform runs again
        source.write("/* edited */\n")
    refused_everywhere(tmp_path, tree, [["transform", tree, "-q"], ["revert", tree]], "symbolic link")


@pytest.mark.parametrize("config", ["../outside/victim.h", "ABSOLUTE"])
def test_state_naming_lock_config_outside_the_tree_is_refused(tmp_path, outside, config):
    tree = transformed(tmp_path)
    state_path = tree / ".rclify" / "state.json"
    state = json.loads(state_path.read_text())
    state["config"], state["config_backup"] = str(outside / "victim.h") if config == "ABSOLUTE" else config, True
    (tree / ".rclify" / "config.orig").write_bytes(b"/* would replace the victim */\n")
    state_path.write_text(json.dumps(state))
    with open(tree / "main.c", "a") as source:
        source.write("/* edited */\n")
    refused_everywhere(tmp_path, tree, [["revert", "--force", tree], ["transform", tree, "-q"]], "outside")


def test_a_transformed_file_made_a_link_is_not_reverted_through(tmp_path, outside):
    tree = transformed(tmp_path)
    (tree / "registry.h").unlink()
    (tree / "registry.h").symlink_to(outside / "victim.h")
    refused_everywhere(tmp_path, tree, [["revert", "--force", tree]], "registry.h", "symbolic link")


def test_rclify_toml_as_a_link_is_refused(tmp_path, outside):
    tree = tree_of(tmp_path)
    (outside / "rclify.toml").write_bytes(b'[check]\nbuild = "true"\ntest = "true"\n')
    (tree / "rclify.toml").symlink_to(outside / "rclify.toml")
    refused_everywhere(tmp_path, tree, [["check", tree], ["check", tree, "--build", "true", "--test", "true"]],
                       "rclify.toml", "symbolic link")


def test_a_link_under_the_temporary_files_name_is_not_written_through(tmp_path, outside):
    """.NAME.rclify-tmp is a name no tree uses, but a crafted tree can: it is replaced, not written
    through, and the transform goes through."""
    tree = tree_of(tmp_path)
    (tree / ".main.c.rclify-tmp").symlink_to(outside / "victim.h")
    (tree / ".lock_config.h.rclify-tmp").symlink_to(outside / "victim.h")
    before = snapshot(outside)
    proc = rclify("transform", tree, "-q")
    assert proc.returncode == 0, proc.stderr
    assert snapshot(outside) == before
    assert not (tree / ".main.c.rclify-tmp").exists() and not (tree / ".main.c.rclify-tmp").is_symlink()
    assert b"rclify_cs_" in (tree / "main.c").read_bytes()


# -- inputs that were silently wrong or ended in a traceback ----------------------------------------

def test_a_fifo_in_a_tree_built_in_a_scratch_copy_is_left_out_of_the_copy(tmp_path):
    """A Makefile: the build runs under bear in a scratch copy of the tree, which copied a FIFO
    (shutil: `is a named pipe`, a traceback); it is left out of the copy, and of --output's."""
    tree = tree_of(tmp_path)
    (tree / "Makefile").write_text("all:\n\tcc -c main.c registry.c\n")
    os.mkfifo(tree / "pipe")
    out = rclify("transform", tree, "-o", tmp_path / "out")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "not copied to" in out.stderr and "pipe" in out.stderr
    assert not (tmp_path / "out" / "pipe").exists() and b"rclify_cs_" in (tmp_path / "out" / "main.c").read_bytes()
    proc = rclify("transform", tree)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "make under bear" in proc.stdout
    assert (tree / "pipe").is_fifo()


def test_crlf_files_keep_their_line_endings_through_transform_rerun_and_revert(tmp_path):
    tree = tree_of(tmp_path)
    for source in tree.iterdir():
        source.write_bytes(source.read_bytes().replace(b"\n", b"\r\n"))
    before = snapshot(tree)
    assert rclify("transform", tree, "-q").returncode == 0
    for name in ("main.c", "registry.c", "registry.h"):
        data = (tree / name).read_bytes()
        assert b"rclify_cs_" in data or name == "registry.h"
        assert data.count(b"\n") == data.count(b"\r\n") > 0, name  # no bare \n anywhere
    with open(tree / "main.c", "ab") as source:
        source.write(b"/* edited */\r\n")
    assert rclify("transform", tree, "-q").returncode == 0
    data = (tree / "main.c").read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n") and data.endswith(b"/* edited */\r\n")
    assert rclify("revert", tree).returncode == 0
    (tree / "lock_config.h").unlink()  # revert keeps it: the user's choices
    after = snapshot(tree)
    assert after.pop("main.c") == before.pop("main.c") + b"/* edited */\r\n" and after == before


@pytest.mark.parametrize("what", ["no C file", "C without locks"])
def test_a_tree_with_nothing_to_change_gets_no_records(tmp_path, what):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "README").write_text("no C here\n")
    if what == "C without locks":
        (tree / "add.c").write_text("int add(int a, int b) { return a + b; }\n")
    before = snapshot(tree)
    proc = rclify("transform", tree)
    assert proc.returncode == 0, proc.stderr
    assert "changed 0" in proc.stdout and "nothing to change" in proc.stderr
    assert snapshot(tree) == before  # no .rclify/, no lock_config.h


# -- what a new user reaches for in the first hour ---------------------------------------------------

def test_bash_completion_is_generated_from_the_parser_and_completes_options(tmp_path):
    """rclify --print-completion bash|zsh: shtab's, from the argument parser (every option there)."""
    bash = rclify("--print-completion", "bash")
    assert bash.returncode == 0 and "_shtab_rclify" in bash.stdout
    script = tmp_path / "rclify.bash"
    script.write_text(bash.stdout)
    done = subprocess.run(["bash", "-c", f"source {script}; COMP_WORDS=(rclify transform --dr); COMP_CWORD=2; "
                                         "_shtab_rclify; echo \"${COMPREPLY[@]}\""], capture_output=True, text=True)
    assert done.stdout.split() == ["--dry-run"], done.stderr
    zsh = rclify("--print-completion", "zsh")
    assert zsh.returncode == 0 and "#compdef rclify" in zsh.stdout
    for option in ("--dry-run", "--ids-of", "--print-completion", "--force"):  # transform, run, the top, revert
        assert option in zsh.stdout and option in bash.stdout


def test_the_pre_commit_hook_runs_transform_check(tmp_path):
    """.pre-commit-hooks.yaml's entry, run as pre-commit runs it (at the tree's root, no file names):
    exit 1 and the diff while a region is left untransformed, 0 once the tree is transformed."""
    manifest = (Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text()
    assert re.search(r"^- id: rclify-check$", manifest, re.M) and "pass_filenames: false" in manifest
    entry = shlex.split(re.search(r"^  entry: (.*)$", manifest, re.M).group(1))
    assert entry[:2] == ["rclify", "transform"] and "--check" in entry
    tree = tree_of(tmp_path)
    pending = rclify(*entry[1:], cwd=tree)
    assert pending.returncode == 1 and "+++" in pending.stdout, pending.stderr
    assert not (tree / ".rclify").exists()  # --check changes nothing
    assert rclify("transform", tree, "-q").returncode == 0
    done = rclify(*entry[1:], cwd=tree)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_full_disk_is_said_as_such(tmp_path, monkeypatch, capsys):
    """A full disk was `spatch failed (exit -11)` naming a scratch file, or a traceback."""
    import errno
    import shutil as shutil_module
    from collections import namedtuple

    from rclify import cli, disk_space
    from rclify.commands import flags
    from rclify.errors import DiskFullError

    def full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "out.json"))

    monkeypatch.setattr(flags, "run", full)
    assert cli.main(["flags", "--cflags"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no space left on device writing" in err and "out.json" in err
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil_module, "disk_usage", lambda path: usage(1 << 30, (1 << 30) - (1 << 20), 1 << 20))
    with pytest.raises(DiskFullError, match="no space left on the file system of .* \\(1 MiB free\\)"):
        disk_space.check_room(tmp_path)
