"""What a transform leaves in the tree, and reading it back.

.rclify/ in the tree records a transform:
    state.json   version; `files`: the files rclify changed; `written`: sha256 of what it wrote to
                 each; `sources`: sha256 of every C file as the transform left the tree; the
                 lock_config.h path, whether the transform created it, and whether it backed up a
                 lock_config.h of the tree's own (config_backup)
    backup/F     the original of each changed file F (what revert restores)
    written/F    what rclify wrote to F (from which a re-transform reads the user's later edits)
    config.orig  the tree's own lock_config.h (not one rclify wrote), which revert puts back

apply.py writes these records (its commit, with journal.py's journal) and takes them back out
(revert).  Paths read from state.json are confined to the tree (rclify/tree_paths.py): a crafted
`../victim`, or a link where rclify would write, is refused.
"""

import hashlib
import json
import os
from pathlib import Path

from rclify import __version__, tree_paths
from rclify.errors import OutsideTreeError, UsageError

STATE_DIR = ".rclify"
STATE_FILE = "state.json"
BACKUP_DIR, WRITTEN_DIR = "backup", "written"
JOURNAL_DIR, REVERTING = "journal", "reverting"
CONFIG_BACKUP = "config.orig"
GENERATED_MARK = b"rclify_cs_"  # in every file with an extracted section


def read_state(root: Path) -> dict | None:
    """state.json, checked: what it names lies inside the tree (tree_paths), .rclify/ holds no link."""
    path = tree_paths.state_dir(root, STATE_DIR) / STATE_FILE
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{path}: unreadable rclify state ({err}); run `rclify revert` or remove it") from None
    if not isinstance(state, dict):
        raise UsageError(f"{path}: unreadable rclify state (not a JSON object); run `rclify revert` or remove it")
    if state.get("version") != __version__:
        raise UsageError(
            f"{root} was transformed by rclify {state.get('version')}, this is {__version__}: "
            f"run `rclify revert {root}` with that version first"
        )
    _check_paths(root, path, state)
    return state


def _check_paths(root: Path, path: Path, state: dict) -> None:
    """Every file state.json names lies inside the tree (a crafted `../victim` or `/etc/x` would
    make revert overwrite a file outside it); the files rclify writes (those it changed,
    lock_config.h) are no links either."""
    for key, kind, required in (("files", list, True), ("written", dict, False), ("sources", dict, False),
                                ("config", str, False)):
        if (key in state or required) and not isinstance(state.get(key), kind):
            raise UsageError(f"{path}: unreadable rclify state (`{key}` is not a {kind.__name__}); run "
                             "`rclify revert` or remove it")
    for rel in [*state.get("written", {}), *state.get("sources", {})]:  # hashed and compared, never written
        if not isinstance(rel, str) or not tree_paths.is_relative_name(rel):
            raise OutsideTreeError(f"{path} names {rel!r}, a path outside {root}: refused (nothing was changed)")
    for rel in state["files"]:
        tree_paths.relative(root, rel, str(path))
    if "config" in state:
        tree_paths.relative(root, state["config"], f"{path} (lock_config.h)")


def config_path_of(root: Path, state: dict) -> Path:
    """lock_config.h as state.json names it: inside the tree, no link (read_state checked it)."""
    return tree_paths.relative(root, state["config"], f"{root / STATE_DIR / STATE_FILE} (lock_config.h)")


def refuse_foreign_transformation(root: Path, files: list[Path]) -> None:
    for path in files:
        if GENERATED_MARK in path.read_bytes():
            raise UsageError(f"{path} already contains rclify-generated code but {root} has no "
                             f"{STATE_DIR}/{STATE_FILE}: transformed by another version or copied by hand")


def read_text(path: Path) -> str:
    """A file's exact text (no newline translation; bytes that are not UTF-8 kept)."""
    return exact_text(path.read_bytes())


def exact_text(data: bytes) -> str:
    """Bytes as read_text gives a file's text."""
    return data.decode("utf-8", "surrogateescape")


def shown_path(path: Path, root: Path) -> str:
    """A path as the records and messages give it: relative to the root when under it."""
    return os.path.relpath(path, root) if path.is_relative_to(root) else str(path)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def data_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_hash(path: Path) -> str | None:
    return data_hash(path.read_bytes()) if path.is_file() else None


def edited_files(root: Path, state: dict) -> list[str]:
    """The files rclify changed whose text is no longer what it wrote (or that are gone)."""
    written = state.get("written")
    if written is None:
        raise UsageError(f"{root} was transformed before rclify recorded what it wrote, so edits made since "
                         f"cannot be told apart: run `rclify revert --force {root}` (it restores the originals "
                         "and discards any such edits), then transform again")
    return [rel for rel in state["files"] if file_hash(root / rel) != written.get(rel)]
