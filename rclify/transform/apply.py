"""Writing a transform into the tree, and taking it back out: each a transaction.

.rclify/ in the tree records a transform:
    state.json   version; `files`: the files rclify changed; `written`: sha256 of what it wrote to
                 each; `sources`: sha256 of every C file as the transform left the tree; the
                 lock_config.h path, whether the transform created it, and whether it backed up a
                 lock_config.h of the tree's own (config_backup)
    backup/F     the original of each changed file F (what revert restores)
    written/F    what rclify wrote to F (from which a re-transform reads the user's later edits)
    config.orig  the tree's own lock_config.h (not one rclify wrote), which revert puts back

commit() writes a transform (the first, or a re-transform): the new records are written aside
(.rclify/next/), then a journal (.rclify/journal/: the path, mode and text of every file about to
change), then the files and lock_config.h, then the journal is marked `records` and the new
records are swapped in, then the journal is removed.  An exception or a signal (SIGINT, SIGTERM,
SIGHUP: rclify/interrupt.py) rolls back at once; after a SIGKILL or a power cut at any instant,
recover() (run first by the next transform or revert) rolls the tree back to what it was before
(journal `writing`) or finishes the swap (journal `records`: every file was written), with one
line saying which.  revert() marks .rclify/reverting before it restores anything, so that an
interrupted revert is finished by the next one.  revert() restores the backups, and refuses
(unless forced) when a file differs from what rclify wrote: a user's edit is never dropped
silently.  lock_config.h stays: it holds the user's choices, and the next transform merges them
(unless it replaced one of the tree's own, which revert restores).

Paths read from state.json are confined to the tree: a crafted `../victim` is refused.
"""

import contextlib
import fcntl
import hashlib
import json
import sys
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from rclify import __version__, atomic_file, interrupt, lock_config
from rclify.errors import UsageError

STATE_DIR = ".rclify"
STATE_FILE = "state.json"
BACKUP_DIR, WRITTEN_DIR = "backup", "written"
JOURNAL_DIR, REVERTING = "journal", "reverting"
CONFIG_BACKUP = "config.orig"
GENERATED_MARK = b"rclify_cs_"  # in every file with an extracted section


@contextlib.contextmanager
def exclusive(root: Path, recover_now: bool = True):
    """One rclify transform or revert at a time per tree: an advisory lock (flock) on the tree's
    root directory itself, so that taking it writes nothing (a dry run changes nothing), held until
    the block ends; a second run is refused with one line.  Then recovers what an interrupted run
    left (recover()), saying so on stderr, and yields that line (None: nothing to recover);
    recover_now=False (a dry run) refuses instead."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"{root}: another rclify is transforming or reverting this tree now; "
                             "nothing was changed (run again when it has finished)") from None
        line = None
        if recover_now:
            line = recover(root)
            if line:
                print(line, file=sys.stderr)
        elif (root / STATE_DIR / JOURNAL_DIR).is_dir() or (root / STATE_DIR / REVERTING).exists():
            raise UsageError(f"{root}: a transform or revert of this tree was interrupted; run `rclify transform` "
                             "or `rclify revert` (not --dry-run) to finish or roll it back first")
        yield line
    finally:
        os.close(fd)  # releases the lock


def read_state(root: Path) -> dict | None:
    path = root / STATE_DIR / STATE_FILE
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise UsageError(f"{path}: unreadable rclify state ({err}); run `rclify revert` or remove it") from None
    if not isinstance(state, dict):
        raise UsageError(f"{path}: unreadable rclify state (not a JSON object); run `rclify revert` or remove it")
    if state.get("version") != __version__:
        raise UsageError(
            f"{root} was transformed by rclify {state.get('version')}, this is {__version__}: "
            f"run `rclify revert {root}` with that version first"
        )
    _check_paths(root, path, state)
    return state


def _check_paths(root: Path, path: Path, state: dict) -> None:
    """Every file state.json names lies inside the tree (a crafted `../victim` or `/etc/x` would
    make revert overwrite a file outside it)."""
    files = state.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise UsageError(f"{path}: unreadable rclify state (`files` is not a list of paths); run `rclify revert` "
                         "or remove it")
    for rel in [*files, *state.get("written", {}), *state.get("sources", {})]:
        if not inside(root, rel):
            raise UsageError(f"{path}: names {rel!r}, a path outside {root}: refused (nothing was changed)")


def inside(root: Path, rel: str) -> bool:
    """rel is a relative path that stays inside root (no `..` out of it, not absolute, through no
    symbolic link to a directory outside it)."""
    if not rel or os.path.isabs(rel) or ".." in Path(rel).parts:
        return False
    return os.path.realpath(root / Path(rel).parent).startswith(os.path.realpath(root) + os.sep) \
        or os.path.realpath(root / Path(rel).parent) == os.path.realpath(root)


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


def commit(root: Path, change: Commit) -> list[str]:
    """Writes the tree's files and lock_config.h, then swaps the new records in, as a transaction
    (the module's docstring); on any failure or signal puts back what was written and keeps the
    previous records.  Returns lines to show the user (a lock_config.h of the tree's own backed up)."""
    state_dir = root / STATE_DIR
    next_dir = state_dir / "next"
    made_state_dir = not state_dir.exists()
    notes = []
    journal = None
    try:
        state_dir.mkdir(exist_ok=True)
        shutil.rmtree(next_dir, ignore_errors=True)
        for sub in (BACKUP_DIR, WRITTEN_DIR):  # both always: an interrupted swap resumes by them
            (next_dir / sub).mkdir(parents=True)
        for rel in sorted(change.originals):
            for sub, text in ((BACKUP_DIR, change.originals[rel]), (WRITTEN_DIR, change.written[rel])):
                target = next_dir / sub / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(text.encode("utf-8", "surrogateescape"))
        config = change.config_path
        rel_config = os.path.relpath(config, root) if config.is_relative_to(root) else str(config)
        previous = _previous_state(root)
        config_backup = bool(previous.get("config_backup"))
        changing = [root / rel for rel in sorted(change.writes)] + [config]
        if not config_backup and config.is_relative_to(root) and _foreign_config(config):
            config_backup = True
            changing.append(state_dir / CONFIG_BACKUP)
            notes.append(f"{rel_config} was the tree's own, not rclify's: kept as {STATE_DIR}/{CONFIG_BACKUP}; "
                         f"`rclify revert` puts it back")
        state = {"version": __version__, "files": sorted(change.originals),
                 "written": {rel: text_hash(change.written[rel]) for rel in sorted(change.originals)},
                 "sources": dict(sorted(change.sources.items())),
                 "config": rel_config, "created_config": change.created_config,
                 "config_backup": config_backup}
        (next_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")
        journal = _write_journal(root, changing, made_state_dir)
        if notes:
            shutil.copy2(config, state_dir / CONFIG_BACKUP, follow_symlinks=False)
        for rel, text in sorted(change.writes.items()):
            _atomic_write(root / rel, text)
        lock_config.write(config, change.locks)
        with interrupt.deferred():  # every file is written: a signal now waits until the records are in
            _mark(journal, "records")
            _swap_records(state_dir, next_dir)
            _drop_journal(journal)
    except BaseException as err:
        with interrupt.deferred():  # a second ^C or SIGTERM does not stop the rollback half way
            if (state_dir / JOURNAL_DIR).is_dir():  # in place (the signal may come as it is renamed in)
                _roll_back(root, state_dir / JOURNAL_DIR)
            for leftover in (next_dir, state_dir / "old", state_dir / f"{JOURNAL_DIR}.tmp",
                             state_dir / f"{JOURNAL_DIR}.done"):
                shutil.rmtree(leftover, ignore_errors=True)
            _drop_empty_state_dir(state_dir)
        if isinstance(err, OSError):
            raise UsageError(f"cannot write {err.filename or root}: {err.strerror}; nothing was changed") from None
        raise
    return notes


def _previous_state(root: Path) -> dict:
    try:
        return json.loads((root / STATE_DIR / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}


def _foreign_config(config: Path) -> bool:
    """A lock_config.h that rclify did not write (no RCLIFY_LOCK_CONFIG_H guard): the tree's own."""
    if not config.is_file() or config.is_symlink():
        return config.is_symlink()
    return lock_config.GUARD.encode() not in config.read_bytes()


def _drop_empty_state_dir(state_dir: Path) -> None:
    """.rclify/ goes when it holds nothing (a first transform rolled back): the tree as it was."""
    if state_dir.is_dir() and not (state_dir / STATE_FILE).exists() and not any(state_dir.iterdir()):
        state_dir.rmdir()


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_journal(root: Path, paths: list[Path], made_state_dir: bool) -> Path:
    """.rclify/journal/: journal.json (phase `writing`, each path about to change: relative to the
    root, or absolute outside it, its mode, or the target of a symbolic link) and pre/N, the bytes
    of path N as they are now.  Written beside and renamed into place: a journal either is whole
    or is not there."""
    state_dir = root / STATE_DIR
    tmp, journal = state_dir / f"{JOURNAL_DIR}.tmp", state_dir / JOURNAL_DIR
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "pre").mkdir(parents=True)
    entries = []
    for n, path in enumerate(paths):
        shown = os.path.relpath(path, root) if path.is_relative_to(root) else str(path)
        entry = {"path": shown, "pre": None}
        if path.is_symlink():
            entry["link"] = os.readlink(path)
        elif path.is_file():
            entry["pre"], entry["mode"] = str(n), path.stat().st_mode & 0o7777
            with open(tmp / "pre" / str(n), "wb") as out:
                out.write(path.read_bytes())
                os.fsync(out.fileno())
        entries.append(entry)
    record = {"phase": "writing", "entries": entries, "made_state_dir": made_state_dir}
    with open(tmp / "journal.json", "w") as out:
        out.write(json.dumps(record, indent=1) + "\n")
        os.fsync(out.fileno())
    _sync_dir(tmp / "pre")
    _sync_dir(tmp)
    os.replace(tmp, journal)
    _sync_dir(state_dir)
    return journal


def _mark(journal: Path, phase: str) -> None:
    record = json.loads((journal / "journal.json").read_text())
    record["phase"] = phase
    tmp = journal / "journal.json.tmp"
    with open(tmp, "w") as out:
        out.write(json.dumps(record, indent=1) + "\n")
        os.fsync(out.fileno())
    os.replace(tmp, journal / "journal.json")
    _sync_dir(journal)


def _roll_back(root: Path, journal: Path) -> int:
    """Puts every journaled path back as it was; returns how many."""
    record = json.loads((journal / "journal.json").read_text())
    for entry in record["entries"]:
        path = root / entry["path"]  # an absolute path (a --config outside the tree) stays itself
        path.with_name(f".{path.name}.rclify-tmp").unlink(missing_ok=True)  # _atomic_write's
        if entry.get("link") is not None:
            if not (path.is_symlink() and os.readlink(path) == entry["link"]):
                path.unlink(missing_ok=True)
                os.symlink(entry["link"], path)
        elif entry["pre"] is None:
            path.unlink(missing_ok=True)
        else:
            pre = (journal / "pre" / entry["pre"]).read_bytes()
            if path.is_symlink() or not path.is_file() or path.read_bytes() != pre:
                if path.is_symlink():
                    path.unlink()
                tmp = path.with_name(f".{path.name}.rclify-tmp")
                tmp.write_bytes(pre)
                os.chmod(tmp, entry["mode"])
                os.replace(tmp, path)
            elif entry.get("mode") is not None:
                os.chmod(path, entry["mode"])
    _drop_journal(journal)
    return len(record["entries"])


def _drop_journal(journal: Path) -> None:
    """Renamed away, then removed: a journal is whole or absent, never half deleted."""
    done = journal.with_name(f"{JOURNAL_DIR}.done")
    shutil.rmtree(done, ignore_errors=True)
    os.replace(journal, done)
    _sync_dir(journal.parent)
    shutil.rmtree(done, ignore_errors=True)


def recover(root: Path) -> str | None:
    """Finishes or rolls back what an interrupted transform or revert left (SIGKILL, power cut);
    returns the line saying which, or None when there was nothing to do."""
    state_dir = root / STATE_DIR
    if not state_dir.is_dir():
        return None
    journal = state_dir / JOURNAL_DIR
    begun = not journal.is_dir() and (any((state_dir / d).exists() for d in ("next", f"{JOURNAL_DIR}.tmp"))
                                      or not any(state_dir.iterdir()))  # an empty .rclify/: commit's first step
    shutil.rmtree(state_dir / f"{JOURNAL_DIR}.tmp", ignore_errors=True)  # never complete: nothing written after
    shutil.rmtree(state_dir / f"{JOURNAL_DIR}.done", ignore_errors=True)  # a journal's run was over
    with interrupt.deferred():
        if (state_dir / REVERTING).exists():
            restored, _ = _restore(root, read_state(root))
            return f"rclify: finished an interrupted revert of {root} ({len(restored)} files restored)"
        line = None
        if begun:  # killed while recording, before the journal: no file of the tree had changed
            line = f"rclify: rolled back an interrupted transform of {root}: no file of the tree had changed yet"
        if journal.is_dir():
            phase = json.loads((journal / "journal.json").read_text())["phase"]
            if phase == "records":  # every file was written: the transform is complete but for its records
                _swap_records(state_dir, state_dir / "next")
                _drop_journal(journal)
                line = f"rclify: completed an interrupted transform of {root} (its files had all been written)"
            else:
                n = _roll_back(root, journal)
                line = (f"rclify: rolled back an interrupted transform of {root}: {n} files as they were "
                        "before it")
        shutil.rmtree(state_dir / "next", ignore_errors=True)
        shutil.rmtree(state_dir / "old", ignore_errors=True)
        _drop_empty_state_dir(state_dir)
    return line


def _swap_records(state_dir: Path, next_dir: Path) -> None:
    """Moves the records in next/ into place, the previous ones to old/ then away.  Resumable: next/
    always holds both subfolders until each is moved, so a subfolder still in next/ means the one
    in .rclify/ is the previous one."""
    old_dir = state_dir / "old"
    old_dir.mkdir(exist_ok=True)
    for sub in (BACKUP_DIR, WRITTEN_DIR):
        if (next_dir / sub).exists():
            if (state_dir / sub).exists():
                shutil.rmtree(old_dir / sub, ignore_errors=True)
                os.replace(state_dir / sub, old_dir / sub)
            os.replace(next_dir / sub, state_dir / sub)
    if (next_dir / STATE_FILE).exists():
        os.replace(next_dir / STATE_FILE, state_dir / STATE_FILE)
    _sync_dir(state_dir)
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
    with open(root / STATE_DIR / REVERTING, "w") as mark:  # from here on, an interrupted revert is finished
        os.fsync(mark.fileno())
    _sync_dir(root / STATE_DIR)
    restored, _ = _restore(root, state)
    return restored, edited


def _restore(root: Path, state: dict) -> tuple[list[str], bool]:
    """Puts every backup back (idempotent: an interrupted revert runs it again), the tree's own
    lock_config.h too, then removes .rclify/."""
    backup_dir = root / STATE_DIR / BACKUP_DIR
    restored = []
    for rel in state["files"]:
        if (backup_dir / rel).exists():
            _atomic_write(root / rel, read_text(backup_dir / rel))
            restored.append(rel)
    config_backup = root / STATE_DIR / CONFIG_BACKUP
    own_config = bool(state.get("config_backup")) and config_backup.exists()
    if own_config:  # the tree's own lock_config.h, which rclify's had replaced
        target = config_path_of(root, state)
        if inside(root, os.path.relpath(target, root)):
            target.unlink(missing_ok=True)
            os.replace(config_backup, target)
            restored.append(os.path.relpath(target, root))
    # otherwise lock_config.h stays: it holds the user's choices, and the next transform merges them
    shutil.rmtree(root / STATE_DIR)
    return restored, own_config


def _few(names: list[str], n: int = 8) -> str:
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")
