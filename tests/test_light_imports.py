"""Modules loaded where libclang or jinja2 may be missing import neither: lock identity
(rclify/lock_identity/: the lock table, helpers, struct instances) and the lock configuration,
read by spatch's embedded Python (semantic_patches/api/calls.cocci), and the profiling side,
which `rclify profile` / `assign` run on a machine that only profiles."""

import subprocess
import sys

import pytest

LIGHT = ["rclify.lock_identity", "rclify.lock_identity.lock_table", "rclify.lock_identity.lock_helpers",
         "rclify.lock_identity.struct_instances", "rclify.lock_identity.zero_initialised_locks",
         "rclify.lock_identity.init_aliases", "rclify.lock_identity.discovered_sites",
         "rclify.ctext.source_tree", "rclify.ctext.includes",
         "rclify.lock_config", "rclify.ctext.languages", "rclify.profiling.lock_id_matching",
         "rclify.profiling.preload_records", "rclify.profiling.assign", "rclify.profiling.profile"]


@pytest.mark.parametrize("module", LIGHT)
def test_module_imports_neither_libclang_nor_jinja2(module):
    code = (f"import sys, {module}\n"
            "heavy = sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in ('clang', 'jinja2')})\n"
            "print(' '.join(heavy))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"{module} pulls in {proc.stdout.strip()}"


# Below the transform: lock identity and the tree read once are read by the transform, the
# profiler and spatch's Python, and read nothing of the transform (no layer imports one above it)
BELOW_TRANSFORM = [m for m in LIGHT if m.startswith(("rclify.lock_identity", "rclify.ctext"))]


@pytest.mark.parametrize("module", BELOW_TRANSFORM)
def test_lower_layers_import_nothing_of_the_transform(module):
    code = (f"import sys, {module}\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('rclify.transform'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"{module} imports {proc.stdout.strip()}"
