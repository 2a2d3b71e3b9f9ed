"""rclify revert (not built yet)."""

from rclify.errors import RclifyError


def add_parser(sub):
    return sub.add_parser("revert", help="(not implemented yet)")


def run(args) -> int:
    raise RclifyError("'rclify revert' is not implemented yet")
