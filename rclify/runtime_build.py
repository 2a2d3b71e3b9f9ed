"""Builds the C runtime and says how a program compiles and links against it.

The runtime's sources are read where rclify's resources are (paths.RUNTIME_DIR: the installed
package's data, or the checkout of an editable install) and built into a per-user cache, one
directory per rclify version, compiler and resource location (platformdirs' user cache,
$XDG_CACHE_HOME/rclify on Linux): never inside site-packages or the checkout, so a shared or
read-only install works for every user.  make keeps the build up to date within it; a lock file
serialises two rclify processes building at once.  Beside the libraries: a pkg-config file
(pkgconfig/rclify.pc) and a CMake package config (cmake/rclify/rclifyConfig.cmake).
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import platformdirs

from rclify import __version__
from rclify.errors import BuildError, ToolMissingError
from rclify.paths import RUNTIME_DIR, require


def _compiler() -> str:
    return os.environ.get("CC") or "gcc"


def _build_key() -> str:
    """What the built objects depend on besides the sources make tracks: the version, the
    compiler (its path, size and date: a new compiler gets a new build) and where the sources are."""
    found = shutil.which(_compiler())
    compiler = "none"
    if found:
        real = os.path.realpath(found)
        st = os.stat(real)
        compiler = f"{real}:{st.st_size}:{st.st_mtime_ns}"
    digest = hashlib.sha256(f"{compiler}\n{RUNTIME_DIR}".encode()).hexdigest()[:12]
    return f"runtime-{__version__}-{digest}"


CACHE_DIR = Path(platformdirs.user_cache_dir("rclify"))
BUILD_DIR = CACHE_DIR / _build_key()
STATIC_LIB = BUILD_DIR / "librclify.a"
LINK_OBJECT = BUILD_DIR / "librclify.o"  # the archive's members as one relocatable object
PROFILER_LIB = BUILD_DIR / "librclify_prof.so"
PKGCONFIG_FILE = BUILD_DIR / "pkgconfig" / "rclify.pc"
CMAKE_CONFIG = BUILD_DIR / "cmake" / "rclify" / "rclifyConfig.cmake"


def make(target: str, what: str, product: Path | None = None) -> str:
    """`make -C RUNTIME_DIR BUILD=BUILD_DIR TARGET` (a no-op when up to date); `what` names it in
    errors.  target: a phony target (all, bench) or a path under BUILD_DIR (absolute, or written
    `build/...` as under the runtime's own build directory).  Returns make's output; fails when
    make does, or when `product` is then missing."""
    require(RUNTIME_DIR / "Makefile")
    if shutil.which("make") is None or shutil.which(_compiler()) is None:
        raise ToolMissingError(f"building {what} needs make and {_compiler()}: apt-get install build-essential")
    if target.startswith("build/"):
        target = str(BUILD_DIR / target[len("build/"):])
    try:
        BUILD_DIR.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BuildError(f"cannot create the runtime's build directory {BUILD_DIR}: {err.strerror} "
                         "(set XDG_CACHE_HOME to a writable directory)") from None
    with open(BUILD_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another rclify building the same runtime waits here
        proc = subprocess.run(["make", "-C", str(RUNTIME_DIR), f"BUILD={BUILD_DIR}", target],
                              capture_output=True, text=True)
    if proc.returncode != 0 or (product is not None and not product.exists()):
        raise BuildError(f"building {what} failed:\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
    return proc.stdout


def build_runtime(quiet: bool = True) -> Path:
    """Builds the runtime and the profiler; returns the static library's path."""
    out = make("all", "the runtime", LINK_OBJECT)
    if not quiet and out.strip():
        print(out, end="")
    write_pkgconfig()
    write_cmake_config()
    return STATIC_LIB


def include_dir() -> Path:
    return RUNTIME_DIR / "include"


def cflags() -> list[str]:
    return [f"-I{include_dir()}"]


def libs() -> list[str]:
    """Link flags that work wherever a build puts them (LDFLAGS before the objects, LIBS or LDLIBS
    after), libtool's reordering included: the runtime as one relocatable object, which the linker
    takes whole in any position, unlike an archive's members, which only resolve references made
    before them.  No commas (no -Wl,...): trees substitute @LIBS@ with `sed s,...,...,`."""
    return [str(LINK_OBJECT), "-pthread", "-ldl"]


def _write_if_changed(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def write_pkgconfig() -> Path:
    """A pkg-config file, so build systems can say `pkg-config --cflags --libs rclify`."""
    text = (
        f"prefix={RUNTIME_DIR}\n"
        "Name: rclify\n"
        "Description: rclify lock runtime (RCL and friends)\n"
        f"Version: {__version__}\n"
        f"Cflags: {' '.join(cflags())}\n"
        f"Libs: {' '.join(libs())}\n"
    )
    return _write_if_changed(PKGCONFIG_FILE, text)


def write_cmake_config() -> Path:
    """A CMake package config: `find_package(rclify CONFIG REQUIRED)` with
    -Drclify_DIR=$(rclify flags --cmake), then `target_link_libraries(prog PRIVATE rclify::rclify)`."""
    text = (
        "# rclify's runtime as an imported target (written by rclify, rclify/runtime_build.py)\n"
        f'set(rclify_VERSION "{__version__}")\n'
        f'set(rclify_INCLUDE_DIRS "{include_dir()}")\n'
        f'set(rclify_LIBRARIES "{LINK_OBJECT}")\n'
        "if(NOT TARGET rclify::rclify)\n"
        "  find_package(Threads REQUIRED)\n"
        "  add_library(rclify::rclify INTERFACE IMPORTED)\n"
        "  set_target_properties(rclify::rclify PROPERTIES\n"
        f'    INTERFACE_INCLUDE_DIRECTORIES "{include_dir()}"\n'
        f'    INTERFACE_LINK_LIBRARIES "{LINK_OBJECT};Threads::Threads;${{CMAKE_DL_LIBS}}")\n'
        "endif()\n"
    )
    version = (
        f'set(PACKAGE_VERSION "{__version__}")\n'
        "if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)\n"
        "  set(PACKAGE_VERSION_COMPATIBLE FALSE)\n"
        "else()\n"
        "  set(PACKAGE_VERSION_COMPATIBLE TRUE)\n"
        "  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)\n"
        "    set(PACKAGE_VERSION_EXACT TRUE)\n"
        "  endif()\n"
        "endif()\n"
    )
    _write_if_changed(CMAKE_CONFIG.with_name("rclifyConfigVersion.cmake"), version)
    return _write_if_changed(CMAKE_CONFIG, text)
