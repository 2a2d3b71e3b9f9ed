"""The paths rclify writes, deletes or renames in a user's tree, each confirmed inside it first.

A tree can come from anyone (a tarball, a repository): its `.rclify/` records, its journal, its
`lock_config.h` and `rclify.toml` are input like any other.  A path read from them, or one that
rclify derives from the tree, is used only once it is known to lie inside the tree:

- given as relative (records: state.json, the journal): not empty, not absolute, no `..`;
- its directory, with every symbolic link in it resolved, is the tree's root or below it;
- the path itself is not a symbolic link (rclify would write, delete or rename through it or in
  its place) and, where it exists, is a regular file;
- `.rclify/` itself is a directory, and nothing in it is a symbolic link or a special file: every
  record, journal and scratch folder rclify writes or removes lies in it.

Anything else is refused with one line (OutsideTreeError) before anything is changed.
"""

import os
import stat
from pathlib import Path

from rclify.errors import OutsideTreeError


def _inside(root: Path, path: Path) -> bool:
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def is_relative_name(rel: str) -> bool:
    """rel names a path below a root by its letters alone: not empty, not absolute, no `..`."""
    return bool(rel) and not os.path.isabs(rel) and ".." not in Path(rel).parts


def relative(root: Path, rel: object, what: str) -> Path:
    """root / rel, for a relative path read from a record (`what` names the record in the
    message); refused unless it is a file path that stays inside the tree."""
    if not isinstance(rel, str) or not is_relative_name(rel):
        raise OutsideTreeError(f"{what} names {rel!r}, a path outside {root}: refused (nothing was changed)")
    return file_in(root, root / rel, what)


def file_in(root: Path, path: Path, what: str) -> Path:
    """path (absolute, or relative to the working directory) when it is a file of the tree that
    rclify may replace: its directory inside the tree once links are resolved, itself no link and
    no special file.  Returns it with its directory resolved (as the root is), itself not."""
    path = Path(os.path.abspath(path))
    if not _inside(root, path.parent) or path.parent == path:
        raise OutsideTreeError(f"{what} {path}: outside the tree {root} (give a path inside it; nothing was changed)")
    refuse_link_or_special(path, what)
    return Path(os.path.realpath(path.parent)) / path.name



def refuse_link_or_special(path: Path, what: str) -> None:
    """A symbolic link or a special file (FIFO, device, socket, directory) where rclify would write
    a regular file: refused, whatever it points to."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as err:
        raise OutsideTreeError(f"{what}: {path}: {err.strerror}: refused (nothing was changed)") from None
    if stat.S_ISLNK(mode):
        raise OutsideTreeError(f"{what}: {path} is a symbolic link (to {os.readlink(path)}): rclify writes no file "
                               "through or over a link; make it a regular file (nothing was changed)")
    if not stat.S_ISREG(mode):
        raise OutsideTreeError(f"{what}: {path} is not a regular file: refused (nothing was changed)")


def state_dir(root: Path, name: str) -> Path:
    """root / name (`.rclify`), once it is confirmed to be absent or a real directory of the tree
    holding only directories and regular files: everything rclify records, journals, stages and
    removes there stays in the tree."""
    path = root / name
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    if not stat.S_ISDIR(mode):
        kind = f"a symbolic link (to {os.readlink(path)})" if stat.S_ISLNK(mode) else "not a directory"
        raise OutsideTreeError(f"{path} is {kind}: rclify keeps its records in a directory of the tree's own; "
                               "remove it (nothing was changed)")
    for dirpath, dirnames, filenames in os.walk(path):  # os.walk follows no link: each is looked at here
        for entry in [*dirnames, *filenames]:
            inner = os.path.join(dirpath, entry)
            entry_mode = os.lstat(inner).st_mode
            if not (stat.S_ISDIR(entry_mode) or stat.S_ISREG(entry_mode)):
                kind = "a symbolic link" if stat.S_ISLNK(entry_mode) else "a special file"
                raise OutsideTreeError(f"{inner} is {kind}: rclify's records hold only its own files and folders; "
                                       f"refused (nothing was changed; remove {path} if you do not need it)")
    return path
