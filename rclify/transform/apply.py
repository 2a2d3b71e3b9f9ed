"""Writing a transform into the tree, and taking it back out.

Every changed file is backed up under .rclify/backup and replaced atomically; lock_config.h is
merged and written; .rclify/state.json records what was changed.  On any failure what was
written is put back.  revert() restores the backups (lock_config.h stays: it holds the user's
choices, and the next transform merges them).
"""

import json
import os
import shutil
from pathlib import Path

from rclify import __version__, atomic_file, lock_config
from rclify.errors import UsageError
from rclify.transform.report import Outcome

STATE_DIR = ".rclify"
STATE_FILE = "state.json"
GENERATED_MARK = b"rclify_cs_"  # in every file with an extracted section


def read_state(root: Path) -> dict | None:
    path = root / STATE_DIR / STATE_FILE
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise UsageError(f"{path}: unreadable rclify state ({err}); run `rclify revert` or remove it") from None
    if state.get("version") != __version__:
        raise UsageError(
            f"{root} was transformed by rclify {state.get('version')}, this is {__version__}: "
            f"run `rclify revert {root}` with that version first"
        )
    return state


def refuse_foreign_transformation(root: Path, files: list[Path]) -> None:
    for path in files:
        if GENERATED_MARK in path.read_bytes():
            raise UsageError(f"{path} already contains rclify-generated code but {root} has no "
                             f"{STATE_DIR}/{STATE_FILE}: transformed by another version or copied by hand")


def _atomic_write(path: Path, text: str) -> None:
    atomic_file.write_text(path, text, tmp_name=f".{path.name}.rclify-tmp", keep_mode=True)


def apply(root: Path, outcome: Outcome, config_path: Path) -> None:
    """Backs up and replaces every changed file; on any failure puts back what was written."""
    state_dir = root / STATE_DIR
    backup_dir = state_dir / "backup"
    written: list[Path] = []
    created_config = not config_path.exists()
    try:
        state_dir.mkdir(exist_ok=True)
        for rel, text in sorted(outcome.changed.items()):
            path = root / rel
            backup = backup_dir / rel
            backup.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, backup)
            _atomic_write(path, text)
            written.append(path)
        if not created_config:
            backup = backup_dir / os.path.relpath(config_path, root)
            backup.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(config_path, backup)
        lock_config.write(config_path, outcome.locks)
        state = {"version": __version__, "files": sorted(outcome.changed), "config": str(config_path),
                 "created_config": created_config}
        _atomic_write(state_dir / STATE_FILE, json.dumps(state, indent=2) + "\n")
    except BaseException as err:
        for path in written:
            shutil.copy2(backup_dir / path.relative_to(root), path)
        if created_config and config_path.exists():
            config_path.unlink()
        shutil.rmtree(state_dir, ignore_errors=True)
        if isinstance(err, OSError):
            raise UsageError(f"cannot write {err.filename or root}: {err.strerror}; nothing was changed") from None
        raise


def revert(src: Path) -> list[str]:
    """Restores every file `transform` changed; returns their relative paths."""
    root = src.resolve()
    state_path = root / STATE_DIR / STATE_FILE
    if not state_path.exists():
        raise UsageError(f"{src}: not transformed by rclify (no {STATE_DIR}/{STATE_FILE})")
    state = json.loads(state_path.read_text())
    backup_dir = root / STATE_DIR / "backup"
    restored = []
    for rel in state["files"]:
        backup = backup_dir / rel
        if not backup.exists():
            raise UsageError(f"backup of {rel} is missing from {backup_dir}: cannot revert safely")
    for rel in state["files"]:
        _atomic_write(root / rel, (backup_dir / rel).read_text(encoding="utf-8", errors="surrogateescape"))
        restored.append(rel)
    # lock_config.h stays: it holds the user's choices, and the next transform merges them
    shutil.rmtree(root / STATE_DIR)
    return restored
