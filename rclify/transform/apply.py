"""Writing a transform into the tree, and taking it back out: each a transaction.

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

What .rclify/ holds is records.py's; the journal is journal.py's.
"""

import contextlib
import fcntl
import json
import sys
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from rclify import __version__, atomic_file, interrupt, lock_config, tree_paths
from rclify.errors import UsageError
from rclify.progress import few
from rclify.transform.journal import (drop_journal, mark_phase, read_journal, roll_back, swap_records, sync_dir,
                                      write_journal)
from rclify.transform.records import (BACKUP_DIR, CONFIG_BACKUP, JOURNAL_DIR, REVERTING, STATE_DIR, STATE_FILE,
                                      WRITTEN_DIR, config_path_of, edited_files, read_state, read_text, shown_path,
                                      text_hash)


@contextlib.contextmanager
def exclusive(root: Path, recover_now: bool = True):
    """One rclify transform or revert at a time per tree: an advisory lock (flock) on the tree's
    root directory itself, so that taking it writes nothing (a dry run changes nothing), held until
    the block ends; a second run is refused with one line.  Then recovers what an interrupted run
    left (recover()), saying so on stderr, and yields that line (None: nothing to recover);
    recover_now=False (a dry run) refuses instead.  First of all, .rclify/ is confirmed to be the
    tree's own directory, with no link in it (tree_paths.state_dir)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"{root}: another rclify is transforming or reverting this tree now; "
                             "nothing was changed (run again when it has finished)") from None
        tree_paths.state_dir(root, STATE_DIR)
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
    read: dict[str, str] = field(default_factory=dict)  # each file written -> its text as the transform read it
    config_read: str | None = None  # lock_config.h as the transform read it (None: there was none)


def _refuse_edited_meanwhile(root: Path, change: Commit) -> None:
    """A file saved (an editor, a build) while the transform read and analysed it would lose that
    edit: its new text derives from what was read, and so do lock_config.h's entries.  Nothing is
    written then, and the user runs the transform again."""
    edited = [rel for rel, text in sorted(change.read.items()) if _text_now(root / rel, read_text) != text]
    config = change.config_path  # its entries were merged with what was read: a hand edit since would go
    if _text_now(config, Path.read_text) != change.config_read:
        edited.append(shown_path(config, root))
    if edited:
        them = "it" if len(edited) == 1 else "them"
        raise UsageError(f"{few(edited, 5)} changed while rclify was transforming {them}: nothing was changed; "
                         "run the transform again")


def _text_now(path: Path, read) -> str | None:
    """The file's text as `read` gives it, None when it is not a regular file or cannot be read."""
    try:
        return read(path) if path.is_file() else None
    except OSError:
        return None


def commit(root: Path, change: Commit) -> list[str]:
    """Writes the tree's files and lock_config.h, then swaps the new records in, as a transaction
    (the module's docstring); on any failure or signal puts back what was written and keeps the
    previous records.  Returns lines to show the user (a lock_config.h of the tree's own backed up)."""
    state_dir = tree_paths.state_dir(root, STATE_DIR)
    for path in [*(root / rel for rel in change.writes), change.config_path]:  # before anything is read or written
        tree_paths.file_in(root, path, "a file the transform writes")
    _refuse_edited_meanwhile(root, change)
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
        rel_config = shown_path(config, root)
        previous = _previous_state(root)
        config_backup = bool(previous.get("config_backup"))
        changing = [root / rel for rel in sorted(change.writes)] + [config]
        if not config_backup and _foreign_config(config):
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
        journal = write_journal(root, changing, made_state_dir)
        if notes:
            shutil.copy2(config, state_dir / CONFIG_BACKUP, follow_symlinks=False)
        for rel, text in sorted(change.writes.items()):
            _atomic_write(root / rel, text)
        lock_config.write(config, change.locks)
        with interrupt.deferred():  # every file is written: a signal now waits until the records are in
            mark_phase(root, journal, "records")
            swap_records(state_dir, next_dir)
            drop_journal(journal)
    except BaseException as err:
        with interrupt.deferred():  # a second ^C or SIGTERM does not stop the rollback half way
            if (state_dir / JOURNAL_DIR).is_dir():  # in place (the signal may come as it is renamed in)
                roll_back(root, state_dir / JOURNAL_DIR)
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
    return config.is_file() and lock_config.GUARD.encode() not in config.read_bytes()


def _drop_empty_state_dir(state_dir: Path) -> None:
    """.rclify/ goes when it holds nothing (a first transform rolled back): the tree as it was."""
    if state_dir.is_dir() and not (state_dir / STATE_FILE).exists() and not any(state_dir.iterdir()):
        state_dir.rmdir()


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
            phase = read_journal(root, journal)["phase"]
            if phase == "records":  # every file was written: the transform is complete but for its records
                swap_records(state_dir, state_dir / "next")
                drop_journal(journal)
                line = f"rclify: completed an interrupted transform of {root} (its files had all been written)"
            else:
                n = roll_back(root, journal)
                line = (f"rclify: rolled back an interrupted transform of {root}: {n} files as they were "
                        "before it")
        shutil.rmtree(state_dir / "next", ignore_errors=True)
        shutil.rmtree(state_dir / "old", ignore_errors=True)
        _drop_empty_state_dir(state_dir)
    return line


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
            f"{few(edited, 8)} changed since the transform; reverting would lose those changes, so nothing "
            f"was restored: run `rclify transform {src}` first to carry them into the originals (then revert), "
            f"or `rclify revert --force {src}` to discard them"
        )
    with open(root / STATE_DIR / REVERTING, "w") as mark:  # from here on, an interrupted revert is finished
        os.fsync(mark.fileno())
    sync_dir(root / STATE_DIR)
    restored, _ = _restore(root, state)
    return restored, edited


def _restore(root: Path, state: dict) -> tuple[list[str], bool]:
    """Puts every backup back (idempotent: an interrupted revert runs it again), the tree's own
    lock_config.h too, then removes .rclify/."""
    backup_dir = root / STATE_DIR / BACKUP_DIR
    restored = []
    for rel in state["files"]:  # each a file of the tree, no link (read_state)
        if (backup_dir / rel).exists():
            _atomic_write(root / rel, read_text(backup_dir / rel))
            restored.append(rel)
    config_backup = root / STATE_DIR / CONFIG_BACKUP
    own_config = bool(state.get("config_backup")) and config_backup.exists()
    if own_config:  # the tree's own lock_config.h, which rclify's had replaced
        target = config_path_of(root, state)
        os.replace(config_backup, target)
        restored.append(os.path.relpath(target, root))

    # otherwise lock_config.h stays: it holds the user's choices, and the next transform merges them
    shutil.rmtree(root / STATE_DIR)
    return restored, own_config
