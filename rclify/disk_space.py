"""A full disk said as such: a tool that runs out of room fails in its own way (spatch with a
segmentation fault, exit -11, naming a scratch file), so where one fails, the file systems rclify
writes to are looked at before its failure is reported."""

import errno
import os
import shutil
import tempfile
from pathlib import Path

from rclify.errors import DiskFullError

LOW = 32 << 20  # bytes: less than this free is taken as the cause of a tool's failure


def check_room(*dirs: Path) -> None:
    """Raises DiskFullError when a file system of dirs (and of the temporary directory) has less
    than LOW bytes free."""
    for directory in [Path(tempfile.gettempdir()), *dirs]:
        try:
            free = shutil.disk_usage(directory).free
        except OSError:
            continue
        if free < LOW:
            raise DiskFullError(f"no space left on the file system of {directory} ({free >> 20} MiB free): "
                                "free some space and run again")


def is_disk_full(err: OSError) -> bool:
    return err.errno in (errno.ENOSPC, errno.EDQUOT)


def disk_full_line(err: OSError) -> str:
    where = f" writing {err.filename}" if err.filename else ""
    return f"no space left on device{where} ({os.strerror(err.errno)}): free some space and run again"
