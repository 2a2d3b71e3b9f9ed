"""rclify revert: put back the files `rclify transform` changed in place."""

from pathlib import Path

from rclify.errors import UsageError
from rclify.transform import apply, records


def add_parser(sub):
    p = sub.add_parser(
        "revert", help="restore the files an in-place transform changed",
        description="Restores the originals of the files rclify transform changed.  A file edited since the "
        "transform is not restored (nothing is): transform again first to carry the edits into the "
        "originals, or give --force to discard them.  Files added since are never touched.",
    )
    p.add_argument("src", type=Path, help="transformed source tree")
    p.add_argument("--force", action="store_true",
                   help="restore the originals even over files edited since the transform (the edits are lost)")
    return p


def run(args) -> int:
    root = args.src.resolve()
    if not root.is_dir():
        raise UsageError(f"{args.src}: not a directory")
    with apply.exclusive(root) as recovered:  # one run per tree; finishes an interrupted transform or revert
        if recovered and not (root / records.STATE_DIR / records.STATE_FILE).exists():
            return 0  # the interrupted run was rolled back (or a revert finished): nothing left to revert
        restored, discarded = apply.revert(args.src, force=args.force)
    print(f"rclify revert: restored {len(restored)} files in {args.src} "
          f"(lock_config.h is kept: a later transform keeps its choices)")
    if discarded:
        print(f"  discarded the edits made since the transform to: {', '.join(discarded)}")
    return 0
