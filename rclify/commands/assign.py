"""rclify assign (not built yet)."""

from rclify.errors import RclifyError


def add_parser(sub):
    return sub.add_parser("assign", help="(not implemented yet)")


def run(args) -> int:
    raise RclifyError("'rclify assign' is not implemented yet")
