"""`rclify flags`: a program links against the runtime wherever its build puts the flags."""

import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None,
                                reason="needs make and cc")

PROGRAM = r"""#include <rclify.h>
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
# Makefiles put the libraries before the objects (LDFLAGS) or after them (LDLIBS, LIBS)
RULES = {
    "LDFLAGS": "prog: prog.o\n\t$(CC) $(LDFLAGS) -o prog prog.o\n",
    "LDLIBS": "prog: prog.o\n\t$(CC) -o prog prog.o $(LDLIBS)\n",
    "LIBS": "prog: prog.o\n\t$(CC) -o prog prog.o $(LIBS)\n",
}


def flags(*which: str) -> str:
    return subprocess.run([sys.executable, "-m", "rclify", "flags", *which], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.parametrize("variable", sorted(RULES))
def test_libs_link_in_any_make_variable(tmp_path, variable):
    (tmp_path / "prog.c").write_text(PROGRAM)
    (tmp_path / "Makefile").write_text(RULES[variable])
    make = subprocess.run(["make", f"CFLAGS={flags('--cflags')}", f"{variable}={flags('--libs')}"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert make.returncode == 0, make.stderr
    run = subprocess.run(["./prog"], cwd=tmp_path, capture_output=True, text=True,
                         env={"RCLIFY_LOCKS": "*=rcl"}, timeout=30)
    assert run.stdout == "1 rcl\n"


def test_libs_have_no_comma():
    # Trees substitute @LIBS@ with sed using "," as the delimiter (xz's liblzma.pc:
    # sed -e 's,@LIBS[@],$(LIBS),g'), so a comma in the flags breaks their build.
    libs = flags("--libs")
    assert "," not in libs and "," not in flags("--cflags")


LIBRARY = r"""#include <rclify.h>
static rcl_mutex_t m = RCL_MUTEX_INITIALIZER(RCL_CONFIG_DEFAULT);
static int bump(void *ctx) { ++*(int *)ctx; return 0; }
int lib_bump(int *n) { return rcl_execute(&m, bump, n); }
"""
USER = r"""#include <rclify.h>
#include <stdio.h>
int lib_bump(int *n);
static rcl_mutex_t m = RCL_MUTEX_INITIALIZER(RCL_CONFIG_DEFAULT);
static int bump(void *ctx) { ++*(int *)ctx; return 0; }
int main(void)
{
    int n = 0;
    lib_bump(&n);
    rcl_execute(&m, bump, &n);
    printf("%d %s\n", n, rcl_algorithm_name(rcl_mutex_algorithm(&m)));
    return 0;
}
"""


def test_libs_link_a_shared_library_and_its_program_as_libtool_does(tmp_path):
    # libtool links a shared library with LIBS wherever it sorts them (here before the objects), and
    # its programs with LIBS again (xz: liblzma.so and xz both get $RCLIFY_LIBS).
    (tmp_path / "lib.c").write_text(LIBRARY)
    (tmp_path / "main.c").write_text(USER)
    cflags, libs = flags("--cflags").split(), flags("--libs").split()
    for cmd in (["cc", "-fPIC", *cflags, "-c", "lib.c"], ["cc", "-shared", "-o", "libuser.so", *libs, "lib.o"],
                ["cc", *cflags, "-c", "main.c"], ["cc", "-o", "prog", "main.o", "-L.", "-luser", *libs]):
        step = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
        assert step.returncode == 0, f"{' '.join(cmd)}: {step.stderr}"
    run = subprocess.run(["./prog"], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                         env={"RCLIFY_LOCKS": "*=rcl", "LD_LIBRARY_PATH": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    assert run.stdout == "2 rcl\n"


def test_pkg_config_says_the_same(tmp_path):
    if shutil.which("pkg-config") is None:
        pytest.skip("pkg-config is not installed")
    directory = flags("--pkgconfig")
    env = {"PKG_CONFIG_PATH": directory, "PATH": "/usr/bin:/bin"}
    libs = subprocess.run(["pkg-config", "--libs", "rclify"], capture_output=True, text=True, env=env, check=True)
    assert libs.stdout.split() == flags("--libs").split()


PLUGIN = r"""#include <rclify.h>
static rcl_mutex_t m = RCL_MUTEX_INITIALIZER(RCL_CONFIG_DEFAULT);
static int bump(void *ctx) { ++*(long *)ctx; return 0; }
long plugin_count(int rounds)
{
    long n = 0;
    for (int i = 0; i < rounds; i++)
        rcl_execute(&m, bump, &n);
    return n;
}
"""
LOADER = r"""#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    (void)argc;
    void *plugin = dlopen(argv[1], RTLD_NOW);
    if (!plugin) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    long (*count)(int) = (long (*)(int))dlsym(plugin, "plugin_count");
    printf("%ld\n", count(1000));
    return 0;
}
"""


@pytest.mark.parametrize("locks", ["*=posix", "*=rcl", "*=profile"])
def test_a_shared_object_linked_with_the_runtime_loads_with_dlopen(tmp_path, locks):
    """A plugin (apr's testdso module) links the runtime as every object of its build does: its
    thread-locals must fit the static TLS glibc keeps for dlopen'ed initial-exec TLS (before: the
    profile algorithm's 3.6 KB table failed the load with "cannot allocate memory in static TLS
    block")."""
    (tmp_path / "plugin.c").write_text(PLUGIN)
    (tmp_path / "loader.c").write_text(LOADER)
    cflags, libs = flags("--cflags").split(), flags("--libs").split()
    subprocess.run(["cc", "-fPIC", "-shared", *cflags, "plugin.c", "-o", "plugin.so", *libs],
                   cwd=tmp_path, check=True)
    subprocess.run(["cc", *cflags, "loader.c", "-o", "loader", *libs, "-ldl"], cwd=tmp_path, check=True)
    env = {"PATH": "/usr/bin:/bin", "RCLIFY_LOCKS": locks, "RCLIFY_PROFILE_OUT": str(tmp_path / "p.json")}
    run = subprocess.run(["./loader", str(tmp_path / "plugin.so")], cwd=tmp_path, capture_output=True, text=True,
                         env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "1000\n"
