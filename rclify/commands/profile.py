"""rclify profile (not built yet)."""

from rclify.errors import RclifyError


def add_parser(sub):
    return sub.add_parser("profile", help="(not implemented yet)")


def run(args) -> int:
    raise RclifyError("'rclify profile' is not implemented yet")
