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

from rclify.transform.records import BACKUP_DIR, JOURNAL_DIR, STATE_DIR, STATE_FILE, WRITTEN_DIR, shown_path


def sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_journal(root: Path, paths: list[Path], made_state_dir: bool) -> Path:
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
        shown = shown_path(path, root)
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
    sync_dir(tmp / "pre")
    sync_dir(tmp)
    os.replace(tmp, journal)
    sync_dir(state_dir)
    return journal


def mark_phase(journal: Path, phase: str) -> None:
    record = json.loads((journal / "journal.json").read_text())
    record["phase"] = phase
    tmp = journal / "journal.json.tmp"
    with open(tmp, "w") as out:
        out.write(json.dumps(record, indent=1) + "\n")
        os.fsync(out.fileno())
    os.replace(tmp, journal / "journal.json")
    sync_dir(journal)


def roll_back(root: Path, journal: Path) -> int:
    """Puts every journaled path back as it was; returns how many."""
    record = json.loads((journal / "journal.json").read_text())
    for entry in record["entries"]:
        path = root / entry["path"]  # an absolute path (a --config outside the tree) stays itself
        path.with_name(f".{path.name}.rclify-tmp").unlink(missing_ok=True)  # apply._atomic_write's
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

