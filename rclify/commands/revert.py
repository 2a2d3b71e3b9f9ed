"""rclify revert: put back the files `rclify transform` changed in place."""

from pathlib import Path

from rclify.transform import apply


def add_parser(sub):
    p = sub.add_parser("revert", help="restore the files an in-place transform changed")
    p.add_argument("src", type=Path, help="transformed source tree")
    return p


def run(args) -> int:
    restored = apply.revert(args.src)
    print(f"rclify revert: restored {len(restored)} files in {args.src} "
          f"(lock_config.h is kept: a later transform keeps its choices)")
    return 0
