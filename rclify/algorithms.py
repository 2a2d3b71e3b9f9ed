"""The lock algorithms the runtime knows, read from its registry: runtime/include/rclify/algorithms.def.

That file is the one list of algorithms: the C preprocessor makes the runtime's enum, names and
operations table from it, and rclify reads it here, so adding an algorithm needs no Python edit.
It holds one line per algorithm, in enum order (RCL_ALG_POSIX = 1, then 2, ...):

    RCL_ALGORITHM(POSIX, posix, "plain pthread mutex: the default, zero overhead")

C comments and preprocessor lines (the guard) are allowed around them; nothing else is.

The waiting policies (POLICIES: how a thread waits for a lock another holds) are rclify.h's enum
rcl_wait_policy, a fixed list; which of them an algorithm honours is known to the runtime only
(its rcl_lock_ops.policies), which refuses any other at start-up, naming the lock.
Users write a choice of both as ALG[/POLICY] (RCLIFY_LOCKS, `rclify check --locks`): parse_choice.
"""

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from rclify.errors import RclifyError, UsageError
from rclify.paths import RUNTIME_DIR, require

REGISTRY = RUNTIME_DIR / "include" / "rclify" / "algorithms.def"

_STRING = r'"(?:\\.|[^"\\\n])*"'
# String literals are matched so that a "/*" or "//" inside one is not taken for a comment.
_COMMENT_OR_STRING = re.compile(rf"{_STRING}|/\*.*?\*/|//[^\n]*", re.S)
_ENTRY = re.compile(
    rf"RCL_ALGORITHM\(\s*(?P<enum>\w+)\s*,\s*(?P<name>\w+)\s*,\s*(?P<description>{_STRING})\s*\)"
)


@dataclass(frozen=True)
class Algorithm:
    enum: str  # POSIX: the C constant is RCL_ALG_POSIX
    name: str  # posix: as lock_config.h users, RCLIFY_LOCKS and rclify's options write it
    description: str
    number: int  # value of RCL_ALG_<enum>: its position in the registry, from 1

    @property
    def constant(self) -> str:
        return f"RCL_ALG_{self.enum}"


@functools.cache
def load(path: Path = REGISTRY) -> tuple[Algorithm, ...]:
    """Every registered algorithm, in enum order.  A line that is not an entry, a comment or a
    preprocessor line is an error naming it, as are duplicates and an ENUM that is not the name in
    capitals (lock_config.h entries are written RCL_ALG_<NAME>)."""
    text = require(Path(path)).read_text()
    # Comments become blanks of the same line count, so errors give the file's line numbers.
    code = _COMMENT_OR_STRING.sub(
        lambda m: m[0] if m[0].startswith('"') else "\n" * m[0].count("\n"), text
    )
    found: list[Algorithm] = []
    for number, line in enumerate(code.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _ENTRY.fullmatch(line)
        if not match:
            raise RclifyError(f"{path}:{number}: expected RCL_ALGORITHM(ENUM, name, \"description\"): {line}")
        enum, name = match["enum"], match["name"]
        if enum != name.upper():
            raise RclifyError(f"{path}:{number}: {enum} must be the name {name!r} in capitals")
        if any(a.name == name for a in found):
            raise RclifyError(f"{path}:{number}: {name!r} is registered twice")
        description = re.sub(r"\\(.)", r"\1", match["description"][1:-1])
        found.append(Algorithm(enum, name, description, len(found) + 1))
    if not found:
        raise RclifyError(f"{path}: no algorithms registered")
    return tuple(found)


def names() -> tuple[str, ...]:
    """The algorithm names, in enum order: ("posix", "rcl", "profile", ...)."""
    return tuple(a.name for a in load())


def describe() -> str:
    """Every algorithm name, for messages: "posix, rcl, profile, ..."."""
    return ", ".join(names())


@dataclass(frozen=True)
class Policy:
    name: str  # auto: as RCLIFY_LOCKS writes it (ttas/park)
    number: int  # value of RCL_WAIT_<NAME> in rclify.h's enum rcl_wait_policy
    description: str

    @property
    def constant(self) -> str:
        return f"RCL_WAIT_{self.name.upper()}"


# rclify.h's enum rcl_wait_policy, in order (tests/test_algorithms.py holds the two together).
POLICIES = (
    Policy("auto", 0, "the default: spin then park, at once when waiters outnumber CPUs"),
    Policy("spin", 1, "spin only, never sleep: for threads with a CPU each"),
    Policy("yield", 2, "spin a little, then sched_yield between checks"),
    Policy("park", 3, "spin a little, then sleep on a futex until woken"),
)
DEFAULT_POLICY = "auto"


def policy_names() -> tuple[str, ...]:
    return tuple(p.name for p in POLICIES)


def policy_by_constant(token: str) -> Policy | None:
    """RCL_WAIT_PARK, or its number (3), as a lock_config.h entry may give it; None if unknown."""
    for p in POLICIES:
        if token == p.constant or token == str(p.number):
            return p
    return None


def parse_choice(text: str, where: str) -> tuple[str, str]:
    """ALG[/POLICY] -> (algorithm, policy), policy DEFAULT_POLICY when not given.  An unknown name is
    a UsageError of one line: `where` (what holds the text), then what was expected."""
    alg, slash, policy = text.partition("/")
    if alg not in names():
        raise UsageError(f"{where}: unknown algorithm {alg!r} (expected one of {describe()})")
    if not slash:
        return alg, DEFAULT_POLICY
    if policy not in policy_names():
        raise UsageError(f"{where}: unknown waiting policy {policy!r} (expected one of {', '.join(policy_names())})")
    return alg, policy
