"""Writing an output file so that an interrupted run never leaves half of it.

A regular file (or a new one) is written beside its final name and renamed into place.  Anything
else that already exists there (/dev/null, /dev/stdout, a FIFO, a terminal) is written in place: a
rename over it would replace the device or pipe with a regular file (as root, /dev/null itself).
(A symbolic link to a regular file is replaced by the new file, as a rename does: a transformed
tree gets its own copy instead of writing through the link to a file outside it.)
"""

import os
from pathlib import Path


def write_text(path: Path, text: str, *, tmp_name: str | None = None, keep_mode: bool = False) -> None:
    """Writes text to path.  tmp_name: the temporary file's name in the same directory (default
    NAME.tmp); keep_mode: give the new file the permissions of the one it replaces."""
    path = Path(path)
    if path.exists() and not path.is_file():
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as out:
            out.write(text)
        return
    tmp = path.with_name(tmp_name or f"{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8", errors="surrogateescape")
    if keep_mode and path.exists():
        os.chmod(tmp, path.stat().st_mode)
    os.replace(tmp, path)
