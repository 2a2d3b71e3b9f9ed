"""rclify's modules import each other without a cycle (issue 23): a module-level import of a
module that is still being imported gives a partially initialised module, which works or fails
depending on which of the two a caller imports first.  Imports inside functions (deferred on
purpose, e.g. a command's heavy dependencies) are not module-level and not counted; nor is a
module importing its own package's other modules (`from rclify.transform.build_flags import
guess` in build_flags/build_scripts.py: the package is being initialised, the module it asks for
is not)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in (ROOT / "rclify").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The rclify modules name imports at module level (a package counts for its submodules'
    imports, but not from inside itself)."""
    targets: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & modules.keys()
            targets |= submodules or {node.module}
    edges = set()
    for target in targets:
        parts = target.split(".")
        for k in range(2, len(parts) + 1):  # importing a.b.c runs a.b's __init__ first
            module = ".".join(parts[:k])
            if module in modules and module != name and not name.startswith(module + "."):
                edges.add(module)
    return edges


def test_no_module_level_import_cycle():
    modules = _modules()
    edges = {name: _imports(name, path, modules) for name, path in modules.items()}
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []
    cycles: list[list[str]] = []

    def walk(module: str) -> None:
        state[module] = 1
        path.append(module)
        for imported in sorted(edges[module]):
            if state.get(imported) == 1:
                cycles.append(path[path.index(imported):] + [imported])
            elif imported not in state:
                walk(imported)
        path.pop()
        state[module] = 2

    for module in sorted(modules):
        if module not in state:
            walk(module)
    assert not cycles, "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_the_check_sees_a_cycle(tmp_path, monkeypatch):
    """The check is not vacuous: two modules importing each other are reported."""
    package = tmp_path / "rclify"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from rclify.b import g\n\ndef f():\n    return g\n")
    (package / "b.py").write_text("from rclify import a\n\ndef g():\n    return a\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    try:
        test_no_module_level_import_cycle()
    except AssertionError as error:
        assert "rclify.a -> rclify.b -> rclify.a" in str(error)
    else:
        raise AssertionError("a cycle went unseen")
