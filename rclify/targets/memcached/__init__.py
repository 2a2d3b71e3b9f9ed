"""memcached (Debian's source package): the built-in default of the README's main job.

source.py fetches it; benchmark.py measures original and transformed builds under memcslap."""

from rclify.targets.memcached.benchmark import add_arguments as add_bench_arguments
from rclify.targets.memcached.benchmark import run as bench
from rclify.targets.memcached.source import DEFAULT_DEST, Source, fetch

__all__ = ["DEFAULT_DEST", "Source", "add_bench_arguments", "bench", "fetch"]
