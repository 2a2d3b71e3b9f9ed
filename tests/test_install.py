"""rclify installed as a user installs it: a wheel built from the checkout, installed into a fresh
venv, the checkout then gone, used from elsewhere with the venv not activated, by root and by a
second, unprivileged user sharing that install (docs/install.md).

One test: building the wheel and the venv is the slow part (a minute; pip fetches the
dependencies from the package index)."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "corpus" / "lockexpr_extern_two_files"  # three files, two of them changed, one lock
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
OTHER_USER = "nobody"

pytestmark = pytest.mark.slow


def system_python() -> str:
    """A python3 every user may run (not one under /root): the venv's interpreter links to it."""
    found = shutil.which("python3", path=SYSTEM_PATH)
    assert found, "no python3 on " + SYSTEM_PATH
    version = subprocess.run([found, "-c", "import sys; print(sys.version_info >= (3, 11))"],
                             capture_output=True, text=True)
    assert version.stdout.strip() == "True", f"{found} is older than 3.11"
    return found


def checkout_copy(dest: Path) -> Path:
    """The checkout's files (tracked, and new ones git does not ignore): what a clean clone holds."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("work/", "tests/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def user_env(home: Path) -> dict[str, str]:
    """No venv on PATH, no PYTHONPATH: rclify is reached by its path alone."""
    return {"PATH": SYSTEM_PATH, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "LANG": "C.UTF-8"}


def run(cmd, cwd, env, user=None, check=True, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env, user=user, capture_output=True, text=True, timeout=900, **kw)
    if check:
        assert proc.returncode == 0, f"{cmd}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def use_it(rclify: str, home: Path, user=None) -> None:
    """transform, build with `rclify flags`, run, profile, check and bench a corpus program."""
    env = user_env(home)
    tree = home / "prog"
    shutil.copytree(PROGRAM, tree)
    if user is not None:
        shutil.chown(tree, user)
        for path in tree.iterdir():
            shutil.chown(path, user)
    # profile the program as written (a transformed one is profiled through the runtime, below)
    run(["gcc", "-O1", "-pthread", "-I.", "main.c", "registry.c", "-o", "prog"], tree, env, user)
    run([rclify, "profile", "-o", str(home / "profile.json"), "--", "./prog"], tree, env, user)
    assert (home / "profile.json").is_file()
    (tree / "prog").unlink()
    out = run([rclify, "transform", str(tree), "-q"], home, env, user).stdout
    assert "2 regions: 2 extracted" in out, out
    assert "rclify_cs_" in (tree / "registry.c").read_text()
    cflags = run([rclify, "flags", "--cflags"], home, env, user).stdout.split()
    libs = run([rclify, "flags", "--libs"], home, env, user).stdout.split()
    assert libs[0].startswith(str(home / "cache")), libs  # built in the user's cache, not the install
    run(["gcc", "-O1", "-pthread", *cflags, "-I.", "main.c", "registry.c", "-o", "prog", *libs], tree, env, user)
    expected = (tree / "expected.txt").read_text()
    assert run(["./prog"], tree, {**env, "RCLIFY_LOCKS": "*=rcl"}, user).stdout == expected
    run(["./prog"], tree, {**env, "RCLIFY_LOCKS": "*=profile", "RCLIFY_PROFILE_OUT": str(home / "transformed.json")},
        user)
    assert (home / "transformed.json").is_file()
    build = "gcc -O1 $RCLIFY_CFLAGS -I. main.c registry.c -o prog $RCLIFY_LIBS"
    checked = run([rclify, "check", str(tree), "--build", build, "--test", "./prog",
                   "--locks", "*=posix", "--locks", "*=rcl"], home, env, user)
    assert "rcl" in checked.stdout, checked.stdout
    run([rclify, "bench", "--out", str(home / "bench"), "--duration", "0.005", "--repeat", "1",
         "--threads", "1,2", "--delays", "0", "--lines", "5", "--ctx", "none", "--nested", "none",
         "--algorithms", "posix,rcl", "--no-plots", "--", "--roundtrip-duration", "0.04"], home, env, user)


def test_wheel_in_a_fresh_venv_from_anywhere():
    base = Path(tempfile.mkdtemp(prefix="rclify-install-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)  # the second user reads the install
        wheels = base / "wheels"
        checkout = checkout_copy(base / "checkout")
        run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(checkout)],
            base, {**os.environ})
        shutil.rmtree(checkout)  # the checkout is moved away: nothing may be read from it
        (wheel,) = wheels.glob("rclify-*.whl")
        venv = base / "venv"
        run([system_python(), "-m", "venv", str(venv)], base, user_env(base))
        run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(wheel)], base,
            {**user_env(base), **{k: v for k, v in os.environ.items() if k.startswith(("PIP_", "HTTP", "HTTPS"))}})
        rclify = str(venv / "bin" / "rclify")
        installed = set(p.relative_to(venv) for p in venv.rglob("*"))

        own = base / "root-home"
        own.mkdir()
        use_it(rclify, own)

        if os.geteuid() == 0:  # the same install, by a user who cannot write to it
            other = base / "other-home"
            other.mkdir()
            shutil.chown(other, OTHER_USER)
            use_it(rclify, other, user=OTHER_USER)
            assert os.stat(other / "cache").st_uid != 0
        else:
            pytest.fail("the second-user half of this test needs root (it runs rclify as nobody)")

        # nothing was built or written inside the install
        assert set(p.relative_to(venv) for p in venv.rglob("*")) - installed <= {
            p.relative_to(venv) for p in venv.rglob("__pycache__*")} | {
            p.relative_to(venv) for p in venv.rglob("*.pyc")}
        assert not list((venv / "lib").rglob("_resources/runtime/build"))
    finally:
        shutil.rmtree(base, ignore_errors=True)


CMAKE_PROGRAM = r"""#include <rclify.h>
#include <stdio.h>
static rcl_mutex_t m = RCL_MUTEX_INITIALIZER(RCL_CONFIG_DEFAULT);
static int bump(void *ctx) { ++*(int *)ctx; return 0; }
int main(void)
{
    int n = 0;
    rcl_execute(&m, bump, &n);
    printf("%d %s\n", n, rcl_algorithm_name(rcl_mutex_algorithm(&m)));
    return 0;
}
"""


def test_cmake_finds_the_runtime_through_its_package_config(tmp_path):
    """find_package(rclify CONFIG REQUIRED) with -Drclify_DIR=$(rclify flags --cmake): the imported
    target rclify::rclify brings the include directory, the runtime and its libraries."""
    assert shutil.which("cmake"), "cmake is not installed (scripts/setup.sh installs it)"
    (tmp_path / "prog.c").write_text(CMAKE_PROGRAM)
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.10)\nproject(p C)\nfind_package(rclify 0.1 CONFIG REQUIRED)\n"
        "add_executable(prog prog.c)\ntarget_link_libraries(prog PRIVATE rclify::rclify)\n")
    cmake_dir = subprocess.run([sys.executable, "-m", "rclify", "flags", "--cmake"], capture_output=True,
                               text=True, check=True).stdout.strip()
    build = tmp_path / "build"
    run(["cmake", "-S", str(tmp_path), "-B", str(build), f"-Drclify_DIR={cmake_dir}"], tmp_path, dict(os.environ))
    run(["cmake", "--build", str(build)], tmp_path, dict(os.environ))
    out = run([str(build / "prog")], tmp_path, {"RCLIFY_LOCKS": "*=rcl"}).stdout
    assert out == "1 rcl\n"
