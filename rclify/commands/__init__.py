"""One module per subcommand (add_parser, run); argument types they share are here."""

import argparse


def positive_int(text: str) -> int:
    """argparse type of -j/--jobs and other counts: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value
