"""Copies rclify's resources into the package when a wheel is built (pip install ., pip wheel .,
pipx install .): the C runtime's sources, the templates and the semantic patches become
rclify/_resources/{runtime,templates,semantic_patches}, read through importlib.resources
(rclify/paths.py).  An editable install (pip install -e .) reads them from the checkout instead.
Everything else is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
RESOURCES = ("runtime", "templates", "semantic_patches")
# build outputs and caches are not resources (the runtime is built per user, rclify/runtime_build.py)
IGNORED = shutil.ignore_patterns("build", "__pycache__", "*.pyc", "*.o", "*.a", "*.so", ".*")


class BuildPyWithResources(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "rclify" / "_resources"
        shutil.rmtree(target, ignore_errors=True)
        for name in RESOURCES:
            shutil.copytree(ROOT / name, target / name, ignore=IGNORED)


setup(cmdclass={"build_py": BuildPyWithResources})
