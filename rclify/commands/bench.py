"""rclify bench (not built yet)."""

from rclify.errors import RclifyError


def add_parser(sub):
    return sub.add_parser("bench", help="(not implemented yet)")


def run(args) -> int:
    raise RclifyError("'rclify bench' is not implemented yet")
