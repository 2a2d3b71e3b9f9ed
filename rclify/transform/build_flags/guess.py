"""Step 5 of knowing the build (build_flags/__init__.py), when nothing better applies: the flags
guessed from the tree's own includes."""

import os
from pathlib import Path

from rclify.ctext.preprocessor import quoted_includes
from rclify.transform.build_flags.database import BuildFlags


def guessed(root: Path) -> BuildFlags:
    """-I for the root and for every directory holding a header that some file includes by a
    name not found beside the including file."""
    headers: dict[str, set[Path]] = {}
    sources = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = Path(directory) / name
            if name.endswith((".h", ".hh", ".hpp")):
                headers.setdefault(name, set()).add(path)
            if name.endswith((".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp")):
                sources.append(path)
    dirs: set[Path] = set()
    for source in sources:
        if not source.is_file():  # a FIFO would block the read (source_tree.source_files lists such files)
            continue
        try:
            text = source.read_text(errors="replace")
        except OSError:
            continue
        for name in quoted_includes(text):
            if (source.parent / name).exists():
                continue
            for header in headers.get(Path(name).name, ()):
                base = header.parents[len(Path(name).parts) - 1]
                if str(header).endswith(name):
                    dirs.add(base)
    dirs.discard(root)
    return BuildFlags(f"guessed ({len(dirs)} include directories)",
                      [f"-I{root}", *[f"-I{d}" for d in sorted(dirs)]])
