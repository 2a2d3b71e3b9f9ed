"""lock_config.h: the human-editable file that says which algorithm each lock uses.

Written by `rclify transform` (one entry per lock allocation site) and updated by `rclify assign`.
Each entry is a macro the transformed code passes to the lock's initializer:

    /* items.c:cache_lock -- &cache_lock; 4 regions, 3 extracted */
    /* assign: 31.2% of time in critical sections -> rcl */
    #define RCLIFY_LOCK_items_c_cache_lock RCL_LOCK_CONFIG("items.c:cache_lock", RCL_ALG_RCL, 0, -1)

Users edit the algorithm, server and cpu fields; re-running transform or assign keeps those edits
(merge()).  The comment lines are regenerated: `description` belongs to transform, `rationale` to
assign.
"""

import re
from dataclasses import dataclass, replace
from pathlib import Path

from rclify import algorithms, atomic_file
from rclify.errors import UsageError
from rclify.templates import templates

GUARD = "RCLIFY_LOCK_CONFIG_H"
NO_OVERRIDE = "config"  # the `rclify check --locks` value meaning "lock_config.h as written"

_ENTRY = re.compile(
    r'^#define\s+RCLIFY_LOCK_(?P<macro>\w+)\s+RCL_LOCK_CONFIG\(\s*"(?P<id>[^"]*)"\s*,\s*'
    r"RCL_ALG_(?P<alg>\w+)\s*,\s*(?P<server>-?\d+)\s*,\s*(?P<cpu>-?\d+)\s*\)\s*$"
)
_COMMENT = re.compile(r"^/\* (?P<text>.*) \*/$")


@dataclass
class LockEntry:
    lock_id: str
    algorithm: str = "posix"
    server: int = 0
    cpu: int = -1
    description: str = ""  # what transform knows: expression, region counts
    rationale: str = ""  # why assign chose the algorithm

    @property
    def macro(self) -> str:
        return "RCLIFY_LOCK_" + macro_suffix(self.lock_id)

    @property
    def head(self) -> str:
        """The first comment line: the id, and what transform knows of the lock."""
        return _comment_safe(f"{self.lock_id} -- {self.description}" if self.description else self.lock_id)

    @property
    def constant(self) -> str:
        return f"RCL_ALG_{self.algorithm.upper()}"


def macro_suffix(lock_id: str) -> str:
    """A C identifier suffix for a lock id: items.c:cache_lock -> items_c_cache_lock."""
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", lock_id)).strip("_")


def _comment_safe(text: str) -> str:
    return text.replace("*/", "* /").replace("\n", " ")


def render(entries: list[LockEntry]) -> str:
    """lock_config.h's text (templates/config/lock_config.h.j2), entries sorted by id."""
    shown = [replace(e, rationale=_comment_safe(e.rationale)) for e in sorted(entries, key=lambda e: e.lock_id)]
    template = templates().get_template("config/lock_config.h.j2")
    return template.render(guard=GUARD, entries=shown, algorithms=algorithms.load())


def parse(text: str, source: str = "lock_config.h") -> list[LockEntry]:
    """Reads the entries back; a malformed entry line is an error naming the line."""
    entries: list[LockEntry] = []
    comments: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        comment = _COMMENT.match(line)
        if comment:
            comments.append(comment.group("text"))
            continue
        if line.startswith("#define RCLIFY_LOCK_") and line != f"#define {GUARD}":
            match = _ENTRY.match(line)
            if not match:
                raise UsageError(f"{source}:{number}: cannot read this lock entry: {line}")
            alg = match.group("alg").lower()
            if alg not in algorithms.names():
                raise UsageError(f"{source}:{number}: unknown algorithm RCL_ALG_{match.group('alg')}")
            entry = LockEntry(match.group("id"), alg, int(match.group("server")), int(match.group("cpu")))
            for text_line in comments:
                if text_line.startswith("assign: "):
                    entry.rationale = text_line[len("assign: ") :]
                elif text_line.startswith(entry.lock_id + " -- "):
                    entry.description = text_line[len(entry.lock_id) + 4 :]
            entries.append(entry)
        if not comment:
            comments = []
    return entries


def read(path: Path) -> list[LockEntry]:
    try:
        return parse(path.read_text(), str(path))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such lock configuration (run `rclify transform` first)") from None


def merge(generated: list[LockEntry], existing: list[LockEntry]) -> list[LockEntry]:
    """Fresh entries from transform, with the user's algorithm/server/cpu and assign's rationale kept.

    Entries of locks that no longer exist in the source are dropped.
    """
    old = {e.lock_id: e for e in existing}
    merged = []
    for entry in generated:
        previous = old.get(entry.lock_id)
        if previous:
            entry.algorithm, entry.server, entry.cpu = previous.algorithm, previous.server, previous.cpu
            entry.rationale = entry.rationale or previous.rationale
        merged.append(entry)
    return merged


def write(path: Path, entries: list[LockEntry]) -> None:
    """Writes atomically (temp file + rename) so an interrupted run never leaves half a file."""
    atomic_file.write_text(path, render(entries))


def validate_override(spec: str) -> str:
    """An RCLIFY_LOCKS value (`rclify check --locks`), checked as the runtime will
    (PATTERN=ALG[:SERVER[@CPU]],...); NO_OVERRIDE means lock_config.h as written."""
    if spec == NO_OVERRIDE:
        return spec
    entries = [e.strip() for e in spec.split(",")]
    for entry in entries:
        pattern, eq, value = entry.rpartition("=")
        m = re.fullmatch(r"(?P<alg>\w+)(?::(?P<server>\d+)(?:@(?P<cpu>\d+))?)?", value)
        if not eq or not pattern or not m:
            raise UsageError(f"--locks {spec!r}: bad entry {entry!r}: expected PATTERN=ALG[:SERVER[@CPU]]")
        if m["alg"] not in algorithms.names():
            raise UsageError(f"--locks {spec!r}: unknown algorithm {m['alg']!r} "
                             f"(expected {', '.join(algorithms.names())})")
        if m["server"] and int(m["server"]) > 63:
            raise UsageError(f"--locks {spec!r}: server must be an integer from 0 to 63")
    return spec
