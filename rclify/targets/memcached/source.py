"""Debian's memcached source: the built-in program rclify is proven on.

`fetch()` gets the source with `apt-get source memcached` (dpkg-source unpacks it and applies
Debian's patches), keeps that unpacked tree as a pristine copy, and makes the working copy from it.
Both steps are idempotent: an existing pristine copy is reused (no network), and an existing
working copy is left as it is (it may hold a transformation and hand edits) unless `fresh=True`.

    work/memcached.pristine/   as dpkg-source left it; never modified
    work/memcached/            the working copy that transform / check / bench use

Command line (used by scripts/main.sh):
    python3 -m rclify.targets.memcached fetch [DEST] [--fresh]
    python3 -m rclify.targets.memcached pristine [DEST]      print the pristine copy's path
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rclify.errors import BuildError, RclifyError, ToolMissingError, UsageError

PACKAGE = "memcached"
DEFAULT_DEST = Path("work") / "memcached"
MARKER = ".rclify-source"  # written in the pristine copy: the Debian version it came from


@dataclass
class Source:
    working: Path  # the working copy
    pristine: Path  # the untouched copy it was made from
    version: str  # Debian version, e.g. 1.6.18-1+deb12u1
    fetched: bool  # True when this call downloaded the source
    copied: bool  # True when this call (re)created the working copy


def pristine_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".pristine")


def is_memcached_tree(path: Path) -> bool:
    return (path / "memcached.c").is_file() and (path / "configure.ac").is_file()


def fetch(dest: Path = DEFAULT_DEST, fresh: bool = False, pristine: Path | None = None, log=print) -> Source:
    """Makes sure `dest` holds Debian's patched memcached source and returns where things are.
    The pristine copy is DEST.pristine unless given (several working copies can share one)."""
    dest = Path(dest).absolute()
    pristine = Path(pristine).absolute() if pristine else pristine_path(dest)
    fetched = False
    if not (is_memcached_tree(pristine) and (pristine / MARKER).is_file()):
        if pristine.exists():
            shutil.rmtree(pristine)  # a download that did not finish
        log(f"memcached: apt-get source {PACKAGE} -> {pristine}")
        _download(pristine)
        fetched = True
    version = (pristine / MARKER).read_text().split()[0]

    copied = False
    if dest.exists() and fresh:
        shutil.rmtree(dest)
    if dest.exists():
        if not is_memcached_tree(dest):
            raise UsageError(f"{dest} exists but is not a memcached source tree: move it away or pass --fresh")
        log(f"memcached: reusing the working copy {dest} (--fresh recreates it from {pristine.name})")
    else:
        shutil.copytree(pristine, dest, symlinks=True)
        copied = True
        log(f"memcached: working copy {dest} (Debian {version})")
    return Source(dest, pristine, version, fetched, copied)


def _download(pristine: Path) -> None:
    for tool, package in (("apt-get", "apt"), ("dpkg-source", "dpkg-dev")):
        if shutil.which(tool) is None:
            raise ToolMissingError(f"fetching memcached needs {tool}: apt-get install {package}")
    pristine.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".memcached-src-", dir=pristine.parent) as tmp:
        proc = subprocess.run(["apt-get", "source", PACKAGE], cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            hint = ""
            if "source URIs" in proc.stderr or "Unable to find a source package" in proc.stderr:
                hint = " (no deb-src entry: run scripts/setup.sh, which adds one and runs apt-get update)"
            raise BuildError(f"apt-get source {PACKAGE} failed{hint}: {proc.stderr.strip()[-1500:]}")
        trees = [p for p in Path(tmp).iterdir() if p.is_dir() and is_memcached_tree(p)]
        dscs = sorted(Path(tmp).glob(f"{PACKAGE}_*.dsc"))
        if len(trees) != 1 or not dscs:
            raise BuildError(f"apt-get source {PACKAGE} left no single source tree in {tmp}")
        tree = trees[0]
        applied = tree / ".pc" / "applied-patches"
        series = tree / "debian" / "patches" / "series"
        if series.is_file() and series.read_text().strip() and not applied.is_file():
            raise BuildError(f"dpkg-source did not apply Debian's patches to {tree.name} (no .pc/applied-patches)")
        version = dscs[-1].stem.split("_", 1)[1]
        patches = len(applied.read_text().split()) if applied.is_file() else 0
        (tree / MARKER).write_text(f"{version} apt-get source {PACKAGE}; {patches} Debian patches applied\n")
        tree.rename(pristine)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m rclify.targets.memcached", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    f = sub.add_parser("fetch", help="get Debian's memcached source (reused when already there)")
    f.add_argument("dest", nargs="?", type=Path, default=DEFAULT_DEST, help="working copy (default: %(default)s)")
    f.add_argument("--fresh", action="store_true", help="recreate the working copy from the pristine copy")
    p = sub.add_parser("pristine", help="print the pristine copy's path")
    p.add_argument("dest", nargs="?", type=Path, default=DEFAULT_DEST)
    args = parser.parse_args(argv)
    try:
        if args.action == "pristine":
            print(pristine_path(Path(args.dest).absolute()))
            return 0
        source = fetch(args.dest, fresh=args.fresh, log=lambda m: print(m, file=sys.stderr))
        print(source.working)
        return 0
    except RclifyError as err:
        print(f"rclify.targets.memcached: error: {err}", file=sys.stderr)
        return err.exit_code

