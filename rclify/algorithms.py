"""The lock algorithms the runtime knows, read from its registry: runtime/include/rclify/algorithms.def.

That file is the one list of algorithms: the C preprocessor makes the runtime's enum, names and
operations table from it, and rclify reads it here, so adding an algorithm needs no Python edit.
It holds one line per algorithm, in enum order (RCL_ALG_POSIX = 1, then 2, ...):

    RCL_ALGORITHM(POSIX, posix, "plain pthread mutex: the default, zero overhead")

C comments and preprocessor lines (the guard) are allowed around them; nothing else is.
"""

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from rclify.errors import RclifyError
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
