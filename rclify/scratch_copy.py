"""A copy of a user's tree (a scratch copy to run its build in, or --output): links copied as
links, and what cannot be copied left out instead of stopping the run with a traceback.

A FIFO, a device or a socket cannot be copied (shutil raises for a FIFO; reading one would block
or consume it) and no build reads one as a source; a file or folder this user may not read cannot
be copied either.  They are left out of the copy and returned, so a caller can list them.
"""

import os
import shutil
import stat
from pathlib import Path
from typing import Callable, Iterable


def copy_tree(src: Path, dst: Path, ignore: Callable[[str, list[str]], Iterable[str]] | None = None) -> list[str]:
    """Copies src to dst (dst may exist); ignore: what the caller leaves out, as shutil.copytree
    takes it.  Returns what was left out because it could not be copied, relative to src."""
    left_out: list[str] = []

    def uncopyable(directory: str, names: list[str]) -> set[str]:
        ignored = set(ignore(directory, names)) if ignore is not None else set()
        for name in names:
            path = os.path.join(directory, name)
            if name not in ignored and not _copyable(path):
                ignored.add(name)
                left_out.append(os.path.relpath(path, src))
        return ignored

    shutil.copytree(src, dst, symlinks=True, ignore=uncopyable, dirs_exist_ok=True)
    return sorted(left_out)


def _copyable(path: str) -> bool:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    if stat.S_ISLNK(mode):
        return True  # copied as a link
    if stat.S_ISDIR(mode):
        return os.access(path, os.R_OK | os.X_OK)
    return stat.S_ISREG(mode) and os.access(path, os.R_OK)
