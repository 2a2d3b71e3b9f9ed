"""Where rclify's own resources live.

An installed rclify (pip install ., a wheel, pipx) carries them as package data, rclify/_resources/
(setup.py copies them in when the wheel is built), read through importlib.resources.  An editable
install (pip install -e .) reads them from the checkout it was installed from.  Nothing is ever
written here: the runtime is built into a per-user cache (runtime_build.py).
"""

import importlib.resources
import sys
from pathlib import Path

from rclify.errors import RclifyError

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent  # the checkout, for an editable install (tests, corpus)


def _resources() -> Path:
    bundled = importlib.resources.files("rclify") / "_resources"
    if bundled.is_dir():
        return Path(str(bundled))  # a wheel installs files: a real directory
    return PROJECT_ROOT


RESOURCES = _resources()
RUNTIME_DIR = RESOURCES / "runtime"
TEMPLATES_DIR = RESOURCES / "templates"
SEMANTIC_PATCHES_DIR = RESOURCES / "semantic_patches"
CORPUS_DIR = PROJECT_ROOT / "corpus"  # the checkout's (tests only: not installed)
IMPORT_ROOT = PACKAGE_DIR.parent  # the directory `import rclify` finds the package in


def require(path: Path) -> Path:
    """Returns path, or fails clearly when the package was installed without its resources."""
    if not path.exists():
        raise RclifyError(
            f"rclify resource {path} is missing: this rclify was installed without its resources; "
            "reinstall it (pip install . or a wheel built with pip wheel .)"
        )
    return path


def install_hint(package: str) -> str:
    """The command that adds package to the environment this rclify runs in, as it was installed:
    pipx's own venv (`pipx inject`), a venv (its pip, named by path: no need to activate it), or
    the system's Python (Debian's package)."""
    prefix = Path(sys.prefix)
    if prefix.parent.name == "venvs" and "pipx" in prefix.parts:
        return f"pipx inject {prefix.name} {package}"
    if sys.prefix != sys.base_prefix:
        return f"{sys.executable} -m pip install {package}"
    return f"apt-get install python3-{package}"
