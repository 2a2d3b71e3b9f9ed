"""Real programs rclify is proven on, one package each (rclify/targets/<name>/).

A target package provides:
    fetch(dest) -> Source          its source tree, from Debian (apt-get source)
    add_bench_arguments(parser)    its benchmark's options (`rclify bench NAME -- ...`)
    bench(args) -> int             its benchmark: original and transformed builds side by side
and `python3 -m rclify.targets.NAME fetch [DEST]` fetches it from the command line.
Its end-to-end test lives with the others, in tests/.
"""

import importlib
from types import ModuleType

from rclify.errors import UsageError

TARGETS = ("memcached",)


def load(name: str) -> ModuleType:
    if name not in TARGETS:
        raise UsageError(f"unknown target '{name}' (expected one of {', '.join(TARGETS)})")
    return importlib.import_module(f"rclify.targets.{name}")
