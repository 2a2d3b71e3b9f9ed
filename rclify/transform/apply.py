"""Writing a transform into the tree, and taking it back out.

.rclify/ in the tree records a transform:
    state.json   version; `files`: the files rclify changed; `written`: sha256 of what it wrote to
                 each; `sources`: sha256 of every C file as the transform left the tree; the
                 lock_config.h path, and whether the transform created it
    backup/F     the original of each changed file F (what revert restores)
    written/F    what rclify wrote to F (from which a re-transform reads the user's later edits)

commit() writes a transform (the first, or a re-transform): every file replaced atomically,
lock_config.h merged and written, the new records swapped in last; on any failure what was
written is put back.  revert() restores the backups, and refuses (unless forced) when a file
differs from what rclify wrote: a user's edit is never dropped silently.  lock_config.h stays:
it holds the user's choices, and the next transform merges them.
"""

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from rclify import __version__, atomic_file, lock_config
from rclify.errors import UsageError

STATE_DIR = ".rclify"
STATE_FILE = "state.json"
BACKUP_DIR, WRITTEN_DIR = "backup", "written"
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


def config_path_of(root: Path, state: dict) -> Path:
    return root / state["config"]  # relative to the root, or absolute when outside it


def refuse_foreign_transformation(root: Path, files: list[Path]) -> None:
    for path in files:
        if GENERATED_MARK in path.read_bytes():
            raise UsageError(f"{path} already contains rclify-generated code but {root} has no "
                             f"{STATE_DIR}/{STATE_FILE}: transformed by another version or copied by hand")


def read_text(path: Path) -> str:
    """A file's exact text (no newline translation; bytes that are not UTF-8 kept)."""
    return path.read_bytes().decode("utf-8", "surrogateescape")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def file_hash(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def edited_files(root: Path, state: dict) -> list[str]:
    """The files rclify changed whose text is no longer what it wrote (or that are gone)."""
    written = state.get("written")
    if written is None:
        raise UsageError(f"{root} was transformed before rclify recorded what it wrote, so edits made since "
                         f"cannot be told apart: run `rclify revert --force {root}` (it restores the originals "
                         "and discards any such edits), then transform again")
    return [rel for rel in state["files"] if file_hash(root / rel) != written.get(rel)]


def _atomic_write(path: Path, text: str) -> None:
    atomic_file.write_text(path, text, tmp_name=f".{path.name}.rclify-tmp", keep_mode=True)


@dataclass
class Commit:
    """What a transform writes: tree files, and the records of the files it transforms."""

    writes: dict[str, str]  # relative path -> the text the tree file gets now
    originals: dict[str, str]  # every file the transform changes -> its original (backup)
    written: dict[str, str]  # the same files -> rclify's text of them
    sources: dict[str, str]  # every C file -> sha256 of the text it has once written
    locks: list[lock_config.LockEntry]
    config_path: Path
    created_config: bool = False
    put_back: dict[Path, bytes | None] = field(default_factory=dict)  # for the rollback


def commit(root: Path, change: Commit) -> None:
    """Writes the tree's files and lock_config.h, then swaps the new records in; on any failure
    puts back what was written and keeps the previous records."""
    state_dir = root / STATE_DIR
    next_dir = state_dir / "next"
    try:
        state_dir.mkdir(exist_ok=True)
        shutil.rmtree(next_dir, ignore_errors=True)
        for rel in sorted(change.originals):
            for sub, text in ((BACKUP_DIR, change.originals[rel]), (WRITTEN_DIR, change.written[rel])):
                target = next_dir / sub / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(text.encode("utf-8", "surrogateescape"))
        config = change.config_path
        rel_config = os.path.relpath(config, root) if config.is_relative_to(root) else str(config)
        state = {"version": __version__, "files": sorted(change.originals),
                 "written": {rel: text_hash(change.written[rel]) for rel in sorted(change.originals)},
                 "sources": dict(sorted(change.sources.items())),
                 "config": rel_config, "created_config": change.created_config}
        next_dir.mkdir(parents=True, exist_ok=True)  # also when no file changes (all left unchanged)
        (next_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")
        for rel, text in sorted(change.writes.items()):
            path = root / rel
            change.put_back[path] = path.read_bytes() if path.exists() else None
            _atomic_write(path, text)
        change.put_back[config] = config.read_bytes() if config.exists() else None
        lock_config.write(config, change.locks)
        _swap_records(state_dir, next_dir)
    except BaseException as err:
        for path, old in change.put_back.items():
            if old is None:
                path.unlink(missing_ok=True)
            else:
                atomic_file.write_text(path, old.decode("utf-8", "surrogateescape"))
        shutil.rmtree(next_dir, ignore_errors=True)
        if not (state_dir / STATE_FILE).exists() and state_dir.is_dir() and not any(state_dir.iterdir()):
            state_dir.rmdir()
        if isinstance(err, OSError):
            raise UsageError(f"cannot write {err.filename or root}: {err.strerror}; nothing was changed") from None
        raise


def _swap_records(state_dir: Path, next_dir: Path) -> None:
    old_dir = state_dir / "old"
    shutil.rmtree(old_dir, ignore_errors=True)
    old_dir.mkdir()
    for sub in (BACKUP_DIR, WRITTEN_DIR):
        if (state_dir / sub).exists():
            os.replace(state_dir / sub, old_dir / sub)
        if (next_dir / sub).exists():
            os.replace(next_dir / sub, state_dir / sub)
    os.replace(next_dir / STATE_FILE, state_dir / STATE_FILE)
    shutil.rmtree(old_dir, ignore_errors=True)
    shutil.rmtree(next_dir, ignore_errors=True)


def revert(src: Path, force: bool = False) -> tuple[list[str], list[str]]:
    """Restores every file `transform` changed: (restored, edits discarded).  A file that differs
    from what rclify wrote holds the user's edits: refused unless force."""
    root = src.resolve()
    state_path = root / STATE_DIR / STATE_FILE
    if not state_path.exists():
        raise UsageError(f"{src}: not transformed by rclify (no {STATE_DIR}/{STATE_FILE})")
    state = read_state(root)
    backup_dir = root / STATE_DIR / BACKUP_DIR
    for rel in state["files"]:
        if not (backup_dir / rel).exists():
            raise UsageError(f"backup of {rel} is missing from {backup_dir}: cannot revert safely")
    edited = [] if force and "written" not in state else edited_files(root, state)
    if edited and not force:
        raise UsageError(
            f"{_few(edited)} changed since the transform; reverting would lose those changes, so nothing "
            f"was restored: run `rclify transform {src}` first to carry them into the originals (then revert), "
            f"or `rclify revert --force {src}` to discard them"
        )
    restored = []
    for rel in state["files"]:
        _atomic_write(root / rel, read_text(backup_dir / rel))
        restored.append(rel)
    # lock_config.h stays: it holds the user's choices, and the next transform merges them
    shutil.rmtree(root / STATE_DIR)
    return restored, edited


def _few(names: list[str], n: int = 8) -> str:
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")
