"""`rclify transform` on a tree it has already transformed: take up the code added or changed since.

  1. The originals.  A file rclify changed and nobody touched since (its text is what rclify
     wrote: sha256 in .rclify/state.json) has its backup as original.  A file edited since has the
     backup with the user's edits carried onto it (carry.py); where an edit cannot be carried (it
     is inside code rclify generated or rewrote) the whole run is refused, naming the files, and
     nothing is written.  Every other file (never changed by rclify, or new) is its own original.
  2. The originals are transformed from scratch in a staging copy of the tree (run.analyse_tree):
     new locks, new or changed sections are found exactly as a first transform finds them, and
     what did not change comes out as before (the transform is deterministic).
  3. Each file gets the transform of its original, or the original itself where nothing in it
     is transformed any more; only files whose text differs from what they hold are written.  The
     backups become these originals, so a later revert restores the originals with the user's
     edits in them.  lock_config.h is merged as always: new locks added, gone ones dropped, the
     user's choices kept.

When no C file changed since the transform (sha256 of each, recorded then), nothing is run.
"""

import os
import shutil
import tempfile
from pathlib import Path

from rclify import scratch_copy
from rclify.errors import UsageError
from rclify.progress import Progress
from rclify.transform import apply, records
from rclify.transform import pipeline
from rclify.transform.carry import Unmappable, carry
from rclify.transform.report import Outcome, print_diff
from rclify.ctext.source_tree import SourceTree, source_files


def run(root: Path, state: dict, options: "pipeline.Options", progress: Progress) -> Outcome:
    config_path = options.config.resolve() if options.config else records.config_path_of(root, state)
    files = source_files(root)
    current = {str(p.relative_to(root)): records.read_text(p) for p in files}
    if _unchanged_since(state, current, config_path):
        outcome = Outcome(root)
        outcome.already_transformed = True
        progress(f"{root}: no C file changed since rclify transformed it: nothing to do")
        return outcome
    originals, carried = _originals(root, state, current)
    progress(f"{root} was transformed by rclify: transforming again "
             f"({len(carried)} files edited since, their edits carried into the originals)")
    outcome = _transform_originals(root, originals, config_path, options, progress)
    targets = {rel: outcome.changed.get(rel, original) for rel, original in originals.items()}
    writes = {rel: text for rel, text in targets.items() if text != current[rel]}
    outcome.rerun = {"updated": sorted(writes), "edits_carried": carried}
    if options.dry_run:
        print_diff(root, writes, outcome.locks, config_path)
    else:
        notes = apply.commit(root, apply.Commit(
            writes, {rel: originals[rel] for rel in outcome.changed}, dict(outcome.changed),
            {rel: records.text_hash(text) for rel, text in targets.items()}, outcome.locks, config_path,
            created_config=state.get("created_config", False), read={rel: current[rel] for rel in writes},
            config_read=outcome.config_read))
        for note in notes:
            progress(note)
    pipeline.finish(outcome, options, progress)
    return outcome


def _unchanged_since(state: dict, current: dict[str, str], config_path: Path) -> bool:
    sources = state.get("sources")
    return (sources is not None and config_path.exists() and set(sources) == set(current)
            and all(records.text_hash(text) == sources[rel] for rel, text in current.items()))


def _originals(root: Path, state: dict, current: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """{relative path: original} of every C file now in the tree, and the files whose edits were
    carried; refuses (UsageError, one line) what cannot be carried."""
    edited = set(records.edited_files(root, state))
    backups, written = root / records.STATE_DIR / records.BACKUP_DIR, root / records.STATE_DIR / records.WRITTEN_DIR
    originals, carried, problems, foreign = {}, [], [], []
    for rel, text in current.items():
        if rel not in state["files"]:
            originals[rel] = text
            if records.GENERATED_MARK.decode() in text:
                foreign.append(rel)
            continue
        for record in (backups / rel, written / rel):
            if not record.is_file():
                raise UsageError(f"{record} is missing: cannot tell the original of {rel}; "
                                 f"run `rclify revert --force {root}` and transform again")
        original = records.read_text(backups / rel)
        if rel not in edited:
            originals[rel] = original
            continue
        try:
            originals[rel] = carry(original, records.read_text(written / rel), text)
            carried.append(rel)
        except Unmappable as err:
            problems.append(f"{rel}:{err.line} ({err.why})")
    if foreign:
        raise UsageError(f"{', '.join(foreign)}: rclify-generated code (rclify_cs_*) that this transform did "
                         "not write there (copied from a transformed file?): remove it, or put the original code back")
    if problems:
        raise UsageError(
            f"edited after the transform inside code that rclify generated or rewrote: {'; '.join(problems)}. "
            "Such edits cannot be carried back to the original source, so nothing was changed. Undo them or "
            "move them out of the generated code and transform again; or make them in the original: note them, "
            f"run `rclify revert --force {root}` (it discards every edit of the files above), redo them there "
            "and transform again"
        )
    return originals, sorted(carried)


def _transform_originals(root: Path, originals: dict[str, str], config_path: Path,
                         options: "pipeline.Options", progress: Progress) -> Outcome:
    """A first transform of the originals, in a copy of the tree (the tree itself is not touched)."""
    stage = Path(tempfile.mkdtemp(prefix="rclify-rerun-"))
    try:
        tree = stage / root.name
        scratch_copy.copy_tree(root, tree, _dot_directories)  # FIFOs, unreadable files left out
        for rel, text in originals.items():
            path = tree / rel
            path.unlink(missing_ok=True)  # a link would be written through
            path.write_bytes(text.encode("utf-8", "surrogateescape"))
        staged_config = tree / config_path.relative_to(root) if config_path.is_relative_to(root) else config_path
        files = source_files(tree)  # in the order a first transform reads them
        outcome = pipeline.analyse_tree(SourceTree(tree, files), staged_config, options, progress, shown=root)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    outcome.root = root
    return outcome


def _dot_directories(directory: str, names: list[str]) -> list[str]:
    return [n for n in names if n.startswith(".") and os.path.isdir(os.path.join(directory, n))]
