"""lock_config.h: the human-editable file that says which algorithm each lock uses.

Written by `rclify transform` (one entry per lock allocation site) and updated by `rclify assign`.
Each entry is a macro the transformed code passes to the lock's initializer:

    /* items.c:cache_lock -- &cache_lock; 4 regions, 3 extracted */
    /* assign: 31.2% of time in critical sections -> rcl */
    #define RCLIFY_LOCK_items_c_cache_lock RCL_LOCK_CONFIG("items.c:cache_lock", RCL_ALG_RCL, 0, -1)

Users edit the algorithm, server and cpu fields, and may give a lock a waiting policy (how its
waiting threads wait: auto, spin, yield, park) with the five-field form:

    #define RCLIFY_LOCK_items_c_cache_lock RCL_LOCK_CONFIG_POLICY("items.c:cache_lock", RCL_ALG_TTAS, 0, -1, RCL_WAIT_PARK)

(written only for a policy other than auto, so files without policies read as before).  Re-running
transform or assign keeps those edits (merge()).  The comment lines are regenerated: `description` belongs to transform, `rationale` to
assign.

Users may also overrule where an extracted section runs (rclify/transform/thread_state.py decides
it otherwise), one line per section, its reason in a comment on the same line (required):

    #define RCLIFY_SECTION_stats_prefix_record_get_1_ON_SERVER /* hash points at a pure function */
    #define RCLIFY_SECTION_conn_close_2_ON_CALLER /* calls back into the caller's event base */

`stats_prefix_record_get_1` is the section's name without `rclify_cs_` (the report's function_extracted).  These
lines are read by the next `rclify transform` (after `rclify revert`, or before the first one)
and kept when transform or assign rewrite the file (write()).
"""

import re
from dataclasses import dataclass, replace
from pathlib import Path

from rclify import algorithms, atomic_file
from rclify.errors import UsageError

GUARD = "RCLIFY_LOCK_CONFIG_H"
NO_OVERRIDE = "config"  # the `rclify check --locks` value meaning "lock_config.h as written"

# RCL_LOCK_CONFIG("id", RCL_ALG_X, server, cpu) or RCL_LOCK_CONFIG_POLICY(..., cpu, RCL_WAIT_Y)
_ENTRY = re.compile(
    r'^#define\s+RCLIFY_LOCK_(?P<macro>\w+)\s+RCL_LOCK_CONFIG(?P<five>_POLICY)?\(\s*"(?P<id>[^"]*)"\s*,\s*'
    r"(?P<alg>\w+)\s*,\s*(?P<server>-?\d+)\s*,\s*(?P<cpu>-?\d+)\s*(?:,\s*(?P<policy>\w+)\s*)?\)\s*$"
)
_COMMENT = re.compile(r"^/\* (?P<text>.*) \*/$")
_SECTION = re.compile(r"^#\s*define\s+RCLIFY_SECTION_(?P<name>\w+?)_(?P<where>ON_SERVER|ON_CALLER)\b\s*(?P<rest>.*)$")
_REASON = re.compile(r"^/\*\s*(?P<reason>.*?)\s*\*/$|^//\s*(?P<line_reason>.*?)\s*$")


@dataclass
class LockEntry:
    lock_id: str
    algorithm: str = "posix"
    server: int = 0
    cpu: int = -1
    description: str = ""  # what transform knows: expression, region counts
    rationale: str = ""  # why assign chose the algorithm
    policy: str = algorithms.DEFAULT_POLICY  # waiting policy: auto, spin, yield, park

    @property
    def choice(self) -> str:
        """ALG, or ALG/POLICY for a policy other than auto (as RCLIFY_LOCKS writes them)."""
        return self.algorithm if self.policy == algorithms.DEFAULT_POLICY else f"{self.algorithm}/{self.policy}"

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

    @property
    def config(self) -> str:
        """The entry's value: RCL_LOCK_CONFIG(...), or RCL_LOCK_CONFIG_POLICY(...) for a policy other
        than auto (an entry without a policy is written as before policies existed)."""
        fields = f'"{self.lock_id}", {self.constant}, {self.server}, {self.cpu}'
        if self.policy == algorithms.DEFAULT_POLICY:
            return f"RCL_LOCK_CONFIG({fields})"
        return f"RCL_LOCK_CONFIG_POLICY({fields}, RCL_WAIT_{self.policy.upper()})"


@dataclass(frozen=True)
class SectionOverride:
    """A user's decision of where one extracted section runs, with the reason they gave."""

    section: str  # rclify_cs_<section> is the extracted function
    on_server: bool  # ON_SERVER (True) or ON_CALLER (False)
    reason: str

    @property
    def line(self) -> str:
        where = "ON_SERVER" if self.on_server else "ON_CALLER"
        return f"#define RCLIFY_SECTION_{self.section}_{where} /* {_comment_safe(self.reason)} */"


def macro_suffix(lock_id: str) -> str:
    """A C identifier suffix for a lock id: items.c:cache_lock -> items_c_cache_lock."""
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", lock_id)).strip("_")


def _comment_safe(text: str) -> str:
    return text.replace("*/", "* /").replace("\n", " ")


def render(entries: list[LockEntry], sections: list[SectionOverride] = ()) -> str:
    """lock_config.h's text (templates/config/lock_config.h.j2), entries sorted by id, then the
    section overrides sorted by section."""
    shown = [replace(e, rationale=_comment_safe(e.rationale)) for e in sorted(entries, key=lambda e: e.lock_id)]
    from rclify.templates import templates  # jinja2 only to write: spatch's Python reads lock ids here

    template = templates().get_template("config/lock_config.h.j2")
    return template.render(guard=GUARD, entries=shown, algorithms=algorithms.load(), policies=algorithms.POLICIES,
                           sections=sorted(sections, key=lambda s: s.section))


def parse_sections(text: str, source: str = "lock_config.h") -> list[SectionOverride]:
    """The section overrides; one without its reason, or named twice, is an error naming the line."""
    found: dict[str, SectionOverride] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        match = _SECTION.match(raw.strip())
        if not match:
            continue
        reason = _REASON.match(match.group("rest").strip())
        why = (reason.group("reason") or reason.group("line_reason") or "").strip() if reason else ""
        if not why:
            raise UsageError(f"{source}:{number}: RCLIFY_SECTION_{match.group('name')}_{match.group('where')} "
                             "needs its reason in a comment on the same line: /* why */")
        name = match.group("name")
        if name in found:
            raise UsageError(f"{source}:{number}: section {name} is overridden twice")
        found[name] = SectionOverride(name, match.group("where") == "ON_SERVER", why)
    return list(found.values())


def read_sections(path: Path) -> list[SectionOverride]:
    """The section overrides of an existing lock_config.h ([] when there is none, or when it is
    not a regular file: reading a FIFO or /dev/stdout would block or consume it)."""
    if not path.is_file():
        return []
    return parse_sections(path.read_text(), str(path))


def _entry(match: re.Match, where: str) -> LockEntry:
    """The entry of a matched line; an unknown algorithm or waiting policy is an error of one line
    naming the lock and listing what is known."""
    lock = f'{where}: lock "{match["id"]}"'
    alg = match["alg"]
    known = [a.constant for a in algorithms.load()]
    if alg not in known:
        raise UsageError(f"{lock}: unknown algorithm {alg} (expected one of {', '.join(known)})")
    policy = algorithms.DEFAULT_POLICY
    if match["five"]:
        found = algorithms.policy_by_constant(match["policy"])
        if found is None:
            raise UsageError(f"{lock}: unknown waiting policy {match['policy']} "
                             f"(expected one of {', '.join(p.constant for p in algorithms.POLICIES)})")
        policy = found.name
    return LockEntry(match["id"], alg[len("RCL_ALG_"):].lower(), int(match["server"]), int(match["cpu"]),
                     policy=policy)


def parse(text: str, source: str = "lock_config.h") -> list[LockEntry]:
    """Reads the entries back; a malformed entry line is an error naming the line, an unknown
    algorithm or policy one naming the line and the lock.  (Whether the algorithm honours the
    policy is the runtime's to say: it refuses the lock at start-up, naming it.)"""
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
            if not match or bool(match["five"]) != bool(match["policy"]):
                raise UsageError(f"{source}:{number}: cannot read this lock entry: {line}")
            entry = _entry(match, f"{source}:{number}")
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
    """Fresh entries from transform, with the user's algorithm/server/cpu/policy and assign's rationale kept.

    Entries of locks that no longer exist in the source are dropped.
    """
    old = {e.lock_id: e for e in existing}
    merged = []
    for entry in generated:
        previous = old.get(entry.lock_id)
        if previous:
            entry.algorithm, entry.server, entry.cpu = previous.algorithm, previous.server, previous.cpu
            entry.policy = previous.policy
            entry.rationale = entry.rationale or previous.rationale
        merged.append(entry)
    return merged


def write(path: Path, entries: list[LockEntry]) -> None:
    """Writes atomically (temp file + rename) so an interrupted run never leaves half a file; the
    section overrides of the file it replaces are kept."""
    atomic_file.write_text(path, render(entries, read_sections(path)))


def validate_override(spec: str) -> str:
    """An RCLIFY_LOCKS value (`rclify check --locks`), checked as the runtime will
    (PATTERN=ALG[/POLICY][:SERVER[@CPU]],...); NO_OVERRIDE means lock_config.h as written.
    Whether ALG honours POLICY only the runtime knows: it refuses the entry at start-up."""
    if spec == NO_OVERRIDE:
        return spec
    entries = [e.strip() for e in spec.split(",")]
    for entry in entries:
        pattern, eq, value = entry.rpartition("=")
        m = re.fullmatch(r"(?P<choice>\w+(?:/\w+)?)(?::(?P<server>\d+)(?:@(?P<cpu>\d+))?)?", value)
        if not eq or not pattern or not m:
            raise UsageError(f"--locks {spec!r}: bad entry {entry!r}: expected PATTERN=ALG[/POLICY][:SERVER[@CPU]]")
        algorithms.parse_choice(m["choice"], f"--locks {spec!r}: entry {entry!r}")
        if m["server"] and int(m["server"]) > 63:
            raise UsageError(f"--locks {spec!r}: server must be an integer from 0 to 63")
    return spec
