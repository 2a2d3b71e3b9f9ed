"""Builds the C runtime (runtime/) and says how a program compiles and links against it."""

import shutil
import subprocess
from pathlib import Path

from rclify.errors import BuildError, ToolMissingError
from rclify.paths import RUNTIME_DIR, require

BUILD_DIR = RUNTIME_DIR / "build"
STATIC_LIB = BUILD_DIR / "librclify.a"
LINK_OBJECT = BUILD_DIR / "librclify.o"  # the archive's members as one relocatable object
PROFILER_LIB = BUILD_DIR / "librclify_prof.so"
PKGCONFIG_FILE = BUILD_DIR / "pkgconfig" / "rclify.pc"


def make(target: str, what: str, product: Path | None = None) -> str:
    """`make -C runtime TARGET` (a no-op when up to date); `what` names it in errors.  Returns
    make's output; fails when make does, or when `product` is then missing."""
    require(RUNTIME_DIR / "Makefile")
    if shutil.which("make") is None or shutil.which("gcc") is None:
        raise ToolMissingError(f"building {what} needs make and gcc: apt-get install build-essential")
    proc = subprocess.run(["make", "-C", str(RUNTIME_DIR), target], capture_output=True, text=True)
    if proc.returncode != 0 or (product is not None and not product.exists()):
        raise BuildError(f"building {what} failed:\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
    return proc.stdout


def build_runtime(quiet: bool = True) -> Path:
    """Builds the runtime and the profiler; returns the static library's path."""
    out = make("all", "the runtime", LINK_OBJECT)
    if not quiet and out.strip():
        print(out, end="")
    write_pkgconfig()
    return STATIC_LIB


def cflags() -> list[str]:
    return [f"-I{RUNTIME_DIR / 'include'}"]


def libs() -> list[str]:
    """Link flags that work wherever a build puts them (LDFLAGS before the objects, LIBS or LDLIBS
    after), libtool's reordering included: the runtime as one relocatable object, which the linker
    takes whole in any position, unlike an archive's members, which only resolve references made
    before them.  No commas (no -Wl,...): trees substitute @LIBS@ with `sed s,...,...,`."""
    return [str(LINK_OBJECT), "-pthread", "-ldl"]


def write_pkgconfig() -> Path:
    """A pkg-config file, so build systems can say `pkg-config --cflags --libs rclify`."""
    from rclify import __version__

    PKGCONFIG_FILE.parent.mkdir(parents=True, exist_ok=True)
    text = (
        f"prefix={RUNTIME_DIR}\n"
        "Name: rclify\n"
        "Description: rclify lock runtime (RCL and friends)\n"
        f"Version: {__version__}\n"
        f"Cflags: {' '.join(cflags())}\n"
        f"Libs: {' '.join(libs())}\n"
    )
    if not PKGCONFIG_FILE.exists() or PKGCONFIG_FILE.read_text() != text:
        PKGCONFIG_FILE.write_text(text)
    return PKGCONFIG_FILE
