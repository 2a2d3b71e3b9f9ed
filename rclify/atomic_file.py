"""Writing an output file so that an interrupted run never leaves half of it.

A regular file (or a new one) is written beside its final name and renamed into place.  Anything
else that already exists there (/dev/null, /dev/stdout, a FIFO, a terminal) is written in place: a
rename over it would replace the device or pipe with a regular file (as root, /dev/null itself).
(A symbolic link to a regular file is replaced by the new file, as a rename does: a transformed
tree gets its own copy instead of writing through the link to a file outside it.)  The temporary
file is always a new one: a file or link already under its name is removed, not written through.
"""

import os
from pathlib import Path

from rclify.errors import UsageError


def write_text(path: Path, text: str, *, tmp_name: str | None = None, keep_mode: bool = False) -> None:
    """Writes text to path.  tmp_name: the temporary file's name in the same directory (default
    .NAME.rclify-tmp: no name a tree's own file would have); keep_mode: give the new file the
    permissions of the one it replaces."""
    path = Path(path)
    data = text.encode("utf-8", "surrogateescape")
    if path.exists() and not path.is_file():
        with open(path, "wb") as out:
            out.write(data)
        return
    mode = path.stat().st_mode & 0o7777 if keep_mode and path.exists() else None
    write_bytes(path, data, tmp_name=tmp_name, mode=mode)


def write_bytes(path: Path, data: bytes, *, tmp_name: str | None = None, mode: int | None = None) -> None:
    """Writes data beside path and renames it into place (mode: the new file's permissions).  The
    temporary file is created afresh: one already there under its name, a link to a file outside
    the tree included, is removed first, never written through."""
    path = Path(path)
    tmp = path.with_name(tmp_name or f".{path.name}.rclify-tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def check_writable(path: Path, option: str) -> None:
    """Raises UsageError (one line, naming the option) unless write_text(path, ...) can succeed:
    checked before any work, so that bad output paths never leave a job half done."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a directory")
    if path.exists() and not path.is_file():  # a device or a pipe: written in place
        if not os.access(path, os.W_OK):
            raise UsageError(f"{option} {path}: not writable")
        return
    parent = path.parent
    if not parent.exists():
        raise UsageError(f"{option} {path}: no such directory: {parent}")
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot create files in {parent} (permission denied)")


def check_creatable_dir(path: Path, option: str) -> None:
    """Raises UsageError unless the directory path exists and is writable or can be created."""
    path = Path(path)
    ancestor = path
    while not ancestor.exists():
        if ancestor.parent == ancestor:
            break
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UsageError(f"{option} {path}: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot create it in {ancestor} (permission denied)")
