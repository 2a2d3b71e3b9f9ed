"""The tree being transformed, read once: its C and C++ files (source_files), each known
by one identity, its path relative to the root, with its bytes (what libclang's offsets index)
and its text (decoded as every step reads C: UTF-8, undecodable bytes kept as surrogates, line
ends as Python's text mode gives them).  The analysis steps ask it instead of the file system, so
a file is read once however many steps look at it, and all see the same text."""

import os
from pathlib import Path

from rclify.ctext.languages import CXX_SUFFIXES

SOURCE_SUFFIXES = (".c", ".h", *CXX_SUFFIXES)  # C++ files: their API is rewritten, they are compile-checked


class SourceTree:
    def __init__(self, root: Path, files: list[Path]):
        self.root = root
        self._resolved_root = root.resolve()  # for paths given resolved (includes.py)
        self.files = files  # absolute, under root
        self._rel_of = {path: str(path.relative_to(root)) for path in files}  # every step asks: once each
        self._data: dict[str, bytes] = {}
        self._text: dict[str, str] = {}
        self._under: dict[str, str | None] = {}

    def rel(self, path: Path | str) -> str:
        """A file's identity: its path relative to the root (given that, or an absolute path under
        the root as given or resolved: libclang names files resolved)."""
        if (known := self._rel_of.get(path)) is not None:
            return known
        path = Path(path)
        if not path.is_absolute():
            return str(path)
        return str(path.relative_to(self.root if path.is_relative_to(self.root) else self._resolved_root))

    def under(self, name: str | Path) -> str | None:
        """The identity of a file named as libclang names it (a header it included: resolved), or
        None when the file is not under the root (a system header)."""
        key = str(name)
        if key not in self._under:
            real = Path(name).resolve()
            root = self._resolved_root
            self._under[key] = str(real.relative_to(root)) if real.is_relative_to(root) else None
        return self._under[key]

    def data(self, path: Path | str) -> bytes:
        rel = self.rel(path)
        if rel not in self._data:
            self._data[rel] = (self.root / rel).read_bytes()
        return self._data[rel]

    def text(self, path: Path | str) -> str:
        """The file's text as Path.read_text(errors="surrogateescape") gives it in a UTF-8 locale."""
        rel = self.rel(path)
        if rel not in self._text:
            decoded = self.data(rel).decode("utf-8", errors="surrogateescape")
            self._text[rel] = decoded.replace("\r\n", "\n").replace("\r", "\n")  # text mode's newlines
        return self._text[rel]

    def texts(self) -> dict[str, str]:
        """{relative path: text} of every file of the tree."""
        return {self.rel(f): self.text(f) for f in self.files}


def source_files(root: Path, skipped: dict[str, str] | None = None) -> list[Path]:
    """The tree's C and C++ files that rclify reads and may rewrite: regular, readable files.  The
    others with a source file's name go to `skipped` ({relative path: why}): a FIFO, a device or a
    socket (reading one would block or consume it), a symbolic link (its target is transformed
    where it lies in the tree, and the link stays a link; one to outside the tree or to nothing is
    not the tree's to change), a file rclify may not read or write."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            # `*.in.h`: a template configure or make turns into the header the build uses (gnulib's
            # pthread.in.h, with @GUARD_PREFIX@ in it): no C, so neither analysed nor rewritten
            if name.endswith(SOURCE_SUFFIXES) and name != "lock_config.h" and not name.endswith(".in.h"):
                path = Path(dirpath) / name
                why = _not_a_source(path)
                if why is None:
                    files.append(path)
                elif skipped is not None:
                    skipped[str(path.relative_to(root))] = why
    return files


def _not_a_source(path: Path) -> str | None:
    if path.is_symlink():
        return "a symbolic link (left as it is)" if path.exists() else "a broken symbolic link"
    if not path.is_file():
        return "not a regular file (a FIFO, a device or a socket)"
    if not os.access(path, os.R_OK | os.W_OK):
        return "not readable and writable by this user"
    return None
