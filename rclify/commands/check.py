"""rclify check (not built yet)."""

from rclify.errors import RclifyError


def add_parser(sub):
    return sub.add_parser("check", help="(not implemented yet)")


def run(args) -> int:
    raise RclifyError("'rclify check' is not implemented yet")
