"""Errors a user can meet: the CLI turns each into one clear line and a non-zero exit."""


class RclifyError(Exception):
    """Base class: str(error) is the one line shown to the user."""

    exit_code = 2


class UsageError(RclifyError):
    """Bad arguments or input the user gave (missing directory, malformed file, ...)."""


class ToolMissingError(RclifyError):
    """An external tool (spatch, a compiler, a build tool) is missing or the wrong version."""


class ParseError(RclifyError):
    """A source file could not be parsed."""


class BuildError(RclifyError):
    """Building the runtime or a target program failed."""


class OutsideTreeError(UsageError):
    """A path rclify would write, delete or rename lies outside the tree, or is a symbolic link or a
    special file (rclify/tree_paths.py): refused before anything is changed."""


class DiskFullError(RclifyError):
    """No room left on a file system rclify writes to (its temporary files, the tree): said as such,
    instead of as the failure of whatever tool met it first (spatch crashing with -11)."""
