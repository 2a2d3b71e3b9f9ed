"""Reading and editing a transformed tree's lock_config.h as a user would, for the tests of
lock helpers and init macros."""

import re
from pathlib import Path

from rclify import lock_config


def entries(tree: Path) -> dict[str, lock_config.LockEntry]:
    """The tree's lock_config.h entries by lock id."""
    return {e.lock_id: e for e in lock_config.read(tree / "lock_config.h")}


def set_algorithm(tree: Path, lock_id: str, algorithm: str) -> None:
    """Edits the entry of lock_id in the tree's lock_config.h to use algorithm ('rcl', 'profile')."""
    config = tree / "lock_config.h"
    text, n = re.subn(rf'(RCL_LOCK_CONFIG\("{re.escape(lock_id)}", )RCL_ALG_\w+', rf"\1RCL_ALG_{algorithm.upper()}",
                      config.read_text())
    assert n == 1, lock_id
    config.write_text(text)
