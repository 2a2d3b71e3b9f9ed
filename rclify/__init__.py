"""rclify: move legacy pthread programs onto Remote Core Locking and other fast locks."""

__version__ = "0.1.0"
