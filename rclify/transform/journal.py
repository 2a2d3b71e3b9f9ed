"""The journal that makes commit() (apply.py) a transaction: .rclify/journal/ holds the path,
mode and text of every file about to change, marked `writing` until every file is written, then
`records` until the new records are swapped in.  Rolled back from it, or finished by the swap,
a transform stopped at any instant leaves the tree as before it or as after it.  Each step is
written aside, synced and renamed into place: a journal is whole or absent.
"""

import json
import os
import shutil
from pathlib import Path

from rclify import atomic_file, tree_paths
from rclify.errors import UsageError
from rclify.transform.records import BACKUP_DIR, JOURNAL_DIR, STATE_DIR, STATE_FILE, WRITTEN_DIR

PHASES = ("writing", "records")  # every file is being written; every file is written, the records are next


def sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_journal(root: Path, paths: list[Path], made_state_dir: bool) -> Path:
    """.rclify/journal/: journal.json (phase `writing`, each path about to change, relative to the
    root, its mode) and pre/N, the bytes of path N as they are now.  Every path is a file of the
    tree (tree_paths: no link, nothing outside it).  Written beside and renamed into place: a
    journal either is whole or is not there."""
    state_dir = root / STATE_DIR
    tmp, journal = state_dir / f"{JOURNAL_DIR}.tmp", state_dir / JOURNAL_DIR
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "pre").mkdir(parents=True)
    entries = []
    for n, path in enumerate(paths):
        path = tree_paths.file_in(root, path, "a file the transform changes")
        entry = {"path": os.path.relpath(path, root), "pre": None}
        if path.is_file():
            entry["pre"], entry["mode"] = str(n), path.stat().st_mode & 0o7777
            with open(tmp / "pre" / str(n), "wb") as out:
                out.write(path.read_bytes())
                os.fsync(out.fileno())
        entries.append(entry)
    record = {"phase": "writing", "entries": entries, "made_state_dir": made_state_dir}
    with open(tmp / "journal.json", "w") as out:
        out.write(json.dumps(record, indent=1) + "\n")
        os.fsync(out.fileno())
    sync_dir(tmp / "pre")
    sync_dir(tmp)
    os.replace(tmp, journal)
    sync_dir(state_dir)
    return journal


def read_journal(root: Path, journal: Path) -> dict:
    """journal.json, checked whole before anything is rolled back or swapped: a journal comes
    from the tree (a repository or a tarball can carry one), so each path it names must be a file
    of the tree (tree_paths) and each `pre` a saved copy in the journal; anything else is refused
    in one line, nothing changed."""
    path = journal / "journal.json"
    def refuse(why: str) -> UsageError:
        return UsageError(f"{path}: {why}: not a journal rclify wrote, refused (nothing was changed); if the tree's "
                          f"files are as you want them, remove {journal}")
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise refuse(f"unreadable ({err})") from None
    if not (isinstance(record, dict) and record.get("phase") in PHASES and isinstance(record.get("entries"), list)):
        raise refuse("no phase and list of entries")
    for entry in record["entries"]:
        if not isinstance(entry, dict) or set(entry) - {"path", "pre", "mode"}:
            raise refuse(f"entry {entry!r} is not a path, its saved copy and mode")
        tree_paths.relative(root, entry.get("path"), str(path))
        pre, mode = entry.get("pre"), entry.get("mode")
        if pre is not None and not (isinstance(pre, str) and pre.isdigit() and (journal / "pre" / pre).is_file()
                                    and isinstance(mode, int) and 0 <= mode <= 0o7777):
            raise refuse(f"entry {entry['path']!r}: no saved copy pre/{pre} with its mode")
    return record


def mark_phase(root: Path, journal: Path, phase: str) -> None:
    record = read_journal(root, journal)
    record["phase"] = phase
    tmp = journal / "journal.json.tmp"
    with open(tmp, "w") as out:
        out.write(json.dumps(record, indent=1) + "\n")
        os.fsync(out.fileno())
    os.replace(tmp, journal / "journal.json")
    sync_dir(journal)


def roll_back(root: Path, journal: Path) -> int:
    """Puts every journaled path back as it was; returns how many.  The whole journal is checked
    first (read_journal): a path outside the tree or through a link changes nothing."""
    record = read_journal(root, journal)
    for entry in record["entries"]:
        path = root / entry["path"]
        tmp_name = f".{path.name}.rclify-tmp"  # apply's atomic writes'
        path.with_name(tmp_name).unlink(missing_ok=True)
        if entry["pre"] is None:
            path.unlink(missing_ok=True)
            continue
        pre = (journal / "pre" / entry["pre"]).read_bytes()
        if not path.is_file() or path.read_bytes() != pre:
            atomic_file.write_bytes(path, pre, tmp_name=tmp_name, mode=entry["mode"])
        else:
            os.chmod(path, entry["mode"])
    drop_journal(journal)
    return len(record["entries"])


def drop_journal(journal: Path) -> None:
    """Renamed away, then removed: a journal is whole or absent, never half deleted."""
    done = journal.with_name(f"{JOURNAL_DIR}.done")
    shutil.rmtree(done, ignore_errors=True)
    os.replace(journal, done)
    sync_dir(journal.parent)
    shutil.rmtree(done, ignore_errors=True)


def swap_records(state_dir: Path, next_dir: Path) -> None:
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
    sync_dir(state_dir)
    shutil.rmtree(old_dir, ignore_errors=True)
    shutil.rmtree(next_dir, ignore_errors=True)

