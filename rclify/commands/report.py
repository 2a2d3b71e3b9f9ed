"""rclify report (not built yet)."""

from rclify.errors import RclifyError


def add_parser(sub):
    return sub.add_parser("report", help="(not implemented yet)")


def run(args) -> int:
    raise RclifyError("'rclify report' is not implemented yet")
