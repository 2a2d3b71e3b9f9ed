"""`rclify transform SRC`: a tree transformed for the first time goes through the pipeline
(pipeline.py) and is committed; a tree rclify has transformed already is taken up again with the
user's later edits carried onto its originals (rerun.py).  One run per tree at a time (apply.py)."""

from pathlib import Path

from rclify import atomic_file, scratch_copy, tree_paths

from rclify.errors import UsageError
from rclify.progress import Progress, few

from rclify.transform import apply as apply_step, records, rerun
from rclify.transform.pipeline import Options, analyse_tree, finish
from rclify.ctext.source_tree import SourceTree, source_files
from rclify.transform.report import Outcome, print_diff


def run(options: Options) -> Outcome:
    progress = Progress(options.quiet)
    root = _prepare_tree(options, progress)
    with apply_step.exclusive(root, recover_now=not options.dry_run):  # one run per tree; recovery
        return _run(root, options, progress)


def _run(root: Path, options: Options, progress: Progress) -> Outcome:
    state = records.read_state(root)
    if state is not None:  # a transformed tree: take up what changed since (rerun.py)
        return rerun.run(root, state, options, progress)
    # lock_config.h before any work: the compile check writes it into a scratch copy of the tree
    # (a link there would be written through), and the commit into the tree
    config_path = tree_paths.file_in(root, options.config or root / "lock_config.h", "lock_config.h")
    skipped: dict[str, str] = {}
    files = source_files(root, skipped)
    records.refuse_foreign_transformation(root, files)
    tree = SourceTree(root, files)  # every step reads the files from here: once each
    outcome = analyse_tree(tree, config_path, options, progress)
    outcome.unchanged.update(skipped)  # listed: `left unchanged: F: why`
    if options.dry_run:
        print_diff(root, outcome.changed, outcome.locks, config_path)
    elif not outcome.changed:  # no records, no lock_config.h: the tree stays as it was
        progress(f"nothing to change in {root}: no record and no lock_config.h written")
    else:
        for note in apply_step.commit(root, _first_commit(tree, outcome, config_path)):
            progress(note)
    finish(outcome, options, progress)
    return outcome


def _first_commit(tree: SourceTree, outcome: Outcome, config_path: Path) -> apply_step.Commit:
    """The files as the transform read them are the originals (commit checks that they are still
    what the tree holds)."""
    originals = {rel: records.exact_text(tree.data(rel)) for rel in outcome.changed}
    sources = {tree.rel(p): records.data_hash(tree.data(p)) for p in tree.files}
    sources.update({rel: records.text_hash(text) for rel, text in outcome.changed.items()})
    return apply_step.Commit(dict(outcome.changed), originals, dict(outcome.changed), sources, outcome.locks,
                             config_path, created_config=not config_path.exists(), read=dict(originals),
                             config_read=outcome.config_read)


def _check_arguments(options: Options) -> None:
    """Every input and output path, before any work: a bad one is one line and nothing written."""
    src = options.src.resolve()
    if not src.is_dir():
        raise UsageError(f"{options.src}: not a directory")
    if options.report is not None:
        atomic_file.check_writable(options.report, "--report")
    if options.config is not None:
        atomic_file.check_writable(options.config, "--config")
        tree = options.output.resolve() if options.output is not None else src
        # the changed files #include it by its path relative to each of them, and the compile
        # check writes it into its scratch copy of the tree
        tree_paths.file_in(tree, options.config, "--config")
    if options.output is not None:
        out = options.output.resolve()
        if out.exists() and not out.is_dir():
            raise UsageError(f"--output {options.output}: exists and is not a directory")
        if out.exists() and any(out.iterdir()):
            raise UsageError(f"--output {options.output}: output directory exists and is not empty")
        if out == src or out.is_relative_to(src):
            raise UsageError(f"--output {options.output}: inside the source tree {options.src}")
        atomic_file.check_creatable_dir(out, "--output")


def _prepare_tree(options: Options, progress: Progress) -> Path:
    _check_arguments(options)
    src = options.src.resolve()
    if options.output is None or options.dry_run:
        return src
    out = options.output.resolve()
    try:
        left_out = scratch_copy.copy_tree(src, out)
    except OSError as err:  # shutil.Error too: the files it could not copy, and why
        raise UsageError(f"--output {options.output}: cannot copy the tree there: {err}") from None
    if left_out:
        progress(f"not copied to {options.output} (a FIFO, a device, a socket or unreadable): {few(left_out, 5)}")
    return out
