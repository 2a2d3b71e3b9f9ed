"""rclify.algorithms reads the runtime's registry (runtime/include/rclify/algorithms.def): what it
returns must be what the built runtime reports, and the runtime's RCLIFY_LOCKS parser must accept
exactly those names."""

import os
import shutil
import subprocess

import pytest

from rclify import algorithms, runtime_build
from rclify.errors import RclifyError

needs_cc = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                              reason="needs cc and make")


def registry_program() -> str:
    """A program printing, for each algorithm rclify knows, its constant's value and the runtime's
    name for it; then RCL_ALG_COUNT and the algorithm a default lock ends up on (RCLIFY_LOCKS)."""
    rows = "".join(
        f'    printf("{a.constant} %d %s\\n", {a.constant}, rcl_algorithm_name({a.constant}));\n'
        for a in algorithms.load()
    )
    return (
        "#include <rclify.h>\n#include <stdio.h>\n\nint main(void)\n{\n"
        + rows
        + '    printf("RCL_ALG_COUNT %d\\n", RCL_ALG_COUNT);\n'
        "    static rcl_mutex_t m; /* zero-filled: the default configuration, then RCLIFY_LOCKS */\n"
        '    printf("lock %s\\n", rcl_algorithm_name(rcl_mutex_algorithm(&m)));\n'
        "    return 0;\n}\n"
    )


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    runtime_build.build_runtime()
    d = tmp_path_factory.mktemp("algorithms")
    (d / "registry.c").write_text(registry_program())
    subprocess.run(
        ["cc", "-std=c99", "-Wall", "-Werror", *runtime_build.cflags(), "registry.c", "-o", "registry",
         *runtime_build.libs()],
        cwd=d, check=True,
    )
    return d / "registry"


def run(program, locks=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RCLIFY_")}
    if locks is not None:
        env["RCLIFY_LOCKS"] = locks
    # cwd: under '*=profile' the program writes rclify-profile.<pid>.json there at exit
    return subprocess.run([str(program)], cwd=program.parent, env=env, capture_output=True, text=True, timeout=60)


def test_registry_is_read_in_enum_order():
    algs = algorithms.load()
    assert [a.number for a in algs] == list(range(1, len(algs) + 1))
    assert algorithms.names() == tuple(a.name for a in algs)
    assert algs[0].constant == "RCL_ALG_POSIX"  # rclify.h's inline fast paths test RCL_ALG_POSIX == 1
    assert all(a.enum == a.name.upper() and a.description for a in algs)


@needs_cc
def test_python_list_is_what_the_runtime_reports(program):
    proc = run(program)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    want = [f"{a.constant} {a.number} {a.name}" for a in algorithms.load()]
    assert lines[: len(want)] == want
    assert lines[len(want)] == f"RCL_ALG_COUNT {len(want) + 1}"  # no algorithm the registry lacks
    assert lines[len(want) + 1] == "lock posix"  # the default


@needs_cc
@pytest.mark.parametrize("name", algorithms.names())
def test_runtime_accepts_every_registered_name(program, name):
    proc = run(program, f"*={name}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"lock {name}"


@needs_cc
def test_runtime_rejects_an_unknown_name_listing_every_registered_one(program):
    proc = run(program, "*=bogus")
    assert proc.returncode == 2 and proc.stdout == ""
    expected = f"unknown algorithm (expected one of {', '.join(algorithms.names())})"
    assert proc.stderr == f"rclify: RCLIFY_LOCKS: bad entry '*=bogus': {expected}\n"


def test_parser_skips_comments_and_guards(tmp_path):
    path = tmp_path / "algorithms.def"
    path.write_text(
        "/* RCL_ALGORITHM(NOT, not, \"in a comment\") */\n#ifndef RCL_ALGORITHM\n#error \"x\"\n#endif\n"
        'RCL_ALGORITHM(A, a, "first // not a comment /* nor this */")  // trailing\n'
        '/* two\n   lines */ RCL_ALGORITHM( B_2 , b_2 , "say \\"b\\"" )\n'
    )
    assert algorithms.load(path) == (
        algorithms.Algorithm("A", "a", "first // not a comment /* nor this */", 1),
        algorithms.Algorithm("B_2", "b_2", 'say "b"', 2),
    )


@pytest.mark.parametrize(
    "text, error",
    [
        ('RCL_ALGORITHM(POSIX, posix, "x")\nRCL_ALGORITHM(Foo, foo, "y")\n', r":2: Foo must be the name 'foo'"),
        ('RCL_ALGORITHM(A, a, "x")\nRCL_ALGORITHM(A, a, "y")\n', r":2: 'a' is registered twice"),
        ('RCL_ALGORITHM(A, a)\n', r":1: expected RCL_ALGORITHM\(ENUM, name"),
        ("/* nothing */\n", r"no algorithms registered"),
    ],
)
def test_parser_errors_name_the_line(tmp_path, text, error):
    path = tmp_path / "algorithms.def"
    path.write_text(text)
    with pytest.raises(RclifyError, match=error):
        algorithms.load(path)


def test_policies_are_the_runtime_enum():
    """rclify.algorithms.POLICIES is rclify.h's enum rcl_wait_policy, names and numbers."""
    import re
    from rclify.paths import RUNTIME_DIR

    header = (RUNTIME_DIR / "include" / "rclify.h").read_text()
    body = re.search(r"enum rcl_wait_policy\s*\{(?P<body>[^}]*)\}", header)["body"]
    constants = [c.split("=")[0].strip() for c in body.split(",") if c.strip()]
    assert constants == [p.constant for p in algorithms.POLICIES] + ["RCL_WAIT_COUNT"]
    assert [p.number for p in algorithms.POLICIES] == list(range(len(algorithms.POLICIES)))
    assert algorithms.DEFAULT_POLICY == algorithms.POLICIES[0].name == "auto"  # RCL_LOCK_CONFIG's RCL_WAIT_AUTO


@needs_cc
def test_policy_numbers_compile_to_the_runtime_constants(tmp_path):
    from rclify.paths import RUNTIME_DIR

    asserts = "".join(f'_Static_assert({p.constant} == {p.number}, "{p.name}");\n' for p in algorithms.POLICIES)
    (tmp_path / "p.c").write_text(f'#include <rclify.h>\n{asserts}_Static_assert(RCL_WAIT_COUNT == '
                                  f'{len(algorithms.POLICIES)}, "count");\n')
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", f"-I{RUNTIME_DIR / 'include'}", "-c", "p.c"],
                   cwd=tmp_path, check=True)


@pytest.mark.parametrize(
    "text, result",
    [("posix", ("posix", "auto")), ("ttas/park", ("ttas", "park")), ("rcl/auto", ("rcl", "auto")),
     ("nosuch", "where: unknown algorithm 'nosuch' (expected one of posix, rcl, "),
     ("ttas/nap", "where: unknown waiting policy 'nap' (expected one of auto, spin, yield, park)"),
     ("nosuch/park", "where: unknown algorithm 'nosuch'")],
)
def test_parse_choice(text, result):
    from rclify.errors import UsageError

    if isinstance(result, tuple):
        assert algorithms.parse_choice(text, "where") == result
    else:
        with pytest.raises(UsageError) as info:
            algorithms.parse_choice(text, "where")
        assert str(info.value).startswith(result)
