"""Where rclify's own resources live (the repository checkout the package was installed from)."""

from pathlib import Path

from rclify.errors import RclifyError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
RUNTIME_DIR = PROJECT_ROOT / "runtime"
TEMPLATES_DIR = PROJECT_ROOT / "templates"
SEMANTIC_PATCHES_DIR = PROJECT_ROOT / "semantic_patches"
CORPUS_DIR = PROJECT_ROOT / "corpus"


def require(path: Path) -> Path:
    """Returns path, or fails clearly when the package was installed without its resources."""
    if not path.exists():
        raise RclifyError(
            f"rclify resource {path} is missing: install rclify from its source tree (pip install -e .)"
        )
    return path
