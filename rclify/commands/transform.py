"""rclify transform (not built yet)."""

from rclify.errors import RclifyError


def add_parser(sub):
    return sub.add_parser("transform", help="(not implemented yet)")


def run(args) -> int:
    raise RclifyError("'rclify transform' is not implemented yet")
