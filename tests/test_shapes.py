"""Every region shape (rclify/transform/shapes/) has its extraction fixture, and that fixture
has an extracted region of the shape: the report's region records name the shapes each region
was written with, so a shape whose idiom its fixture no longer shows, or one added without a
fixture, fails here (as tests/test_refusals.py does for refusal reasons)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rclify.transform.shapes.registry import BODY_ORDER, SHAPES, STARTS

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "extract"


def test_every_shape_is_named_once_and_writes_bodies_and_starts_regions_from_the_list():
    names = [shape.name for shape in SHAPES]
    assert len(set(names)) == len(names) and all(names)
    assert all(shape in SHAPES for shape in BODY_ORDER)
    assert all(shape in SHAPES for shape in STARTS)  # each with its fixture, tested below


@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: shape.name)
def test_the_shape_has_a_fixture_with_a_region_of_it(shape, tmp_path):
    fixture = FIXTURES / shape.fixture
    assert shape.fixture and (fixture / "input.c").is_file() and (fixture / "expected.c").is_file(), \
        f"shape {shape.name}: no extraction fixture tests/fixtures/extract/{shape.fixture or '<fixture>'}/"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "input.c").write_bytes((fixture / "input.c").read_bytes())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "--dry-run", "-q", "-j", "1",
                    "--report", str(tmp_path / "report.json")], env=env, check=True, capture_output=True, timeout=120)
    regions = json.loads((tmp_path / "report.json").read_text())["regions"]
    assert any(r["status"] == "extracted" and shape.name in r["shapes"] for r in regions), \
        f"{shape.fixture}: no extracted region written as {shape.name}: {[r.get('shapes') for r in regions]}"


@pytest.mark.parametrize("module", ["rclify.transform.shapes", "rclify.transform.shapes.registry", "rclify.transform.shapes.trylock",
                                    "rclify.transform.region_close", "rclify.transform.region_checks",
                                    "rclify.transform.region_bounds"])
def test_the_walk_and_the_shapes_import_whichever_comes_first(module):
    """region_close and region_checks ask some shapes' steps, and the shapes' bounds use them back:
    each must import first, in a fresh interpreter (tests/test_import_cycles.py checks that no
    module-level import cycle is left)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
