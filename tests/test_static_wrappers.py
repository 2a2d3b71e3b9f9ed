"""Static lock wrappers defined again, under the same name, in several files (libmicrohttpd's
MHD_ip_count_lock in src/lib/daemon_ip_limit.c and src/microhttpd/daemon.c): each file's sections
use that file's own wrapper, so the program still links and runs; a file whose static wrapper locks
something else than the first one seen is not given the other file's accessor."""

import json
import subprocess
import sys
from pathlib import Path

from rclify import runtime_build

ROOT = Path(__file__).resolve().parent.parent

COMMON = "#include <pthread.h>\nstruct counter { pthread_mutex_t m; pthread_mutex_t other; long n; };\n"


def _file(name: str, field: str) -> str:
    return (COMMON + f"static void grab(struct counter *c) {{ pthread_mutex_lock(&c->{field}); }}\n"
            f"static void drop(struct counter *c) {{ pthread_mutex_unlock(&c->{field}); }}\n"
            f"void add_{name}(struct counter *c, long v)\n{{\n    grab(c);\n    c->n += v;\n    drop(c);\n}}\n")


MAIN = COMMON + r"""
#include <stdio.h>
void add_a(struct counter *c, long v);
void add_b(struct counter *c, long v);
void add_c(struct counter *c, long v);
static struct counter total = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, 0 };
static void *work(void *arg)
{
    for (long i = 0; i < 20000; i++) {
        add_a(&total, 1);
        add_b(&total, 2);
    }
    (void)arg;
    return NULL;
}
int main(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    add_c(&total, 0);
    printf("%ld\n", total.n);
    return 0;
}
"""


def test_each_file_uses_its_own_static_wrapper(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.c").write_text(_file("a", "m"))
    (tree / "b.c").write_text(_file("b", "m"))
    (tree / "c.c").write_text(_file("c", "other"))  # same names, another lock
    (tree / "main.c").write_text(MAIN)
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "-q", "-j", "1", "--report",
                           str(report)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    regions = {r["file"]: r for r in json.loads(report.read_text())["regions"]}
    assert regions["a.c"]["status"] == regions["b.c"]["status"] == "extracted"
    assert regions["c.c"]["status"] == "hybrid"  # its grab() is not a.c's: never given a.c's accessor
    for name in ("a.c", "b.c"):  # each file defines the accessor it uses
        assert "rclify_mutex_of_grab(struct counter" in (tree / name).read_text().split("add_")[0]
    runtime_build.build_runtime()
    build = subprocess.run(["cc", "-O1", "-pthread", *runtime_build.cflags(), "a.c", "b.c", "c.c", "main.c",
                            "-o", "prog", *runtime_build.libs()], cwd=tree, capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr
    for locks in ("*=posix", "*=rcl", "*=ccsynch"):
        run = subprocess.run(["./prog"], cwd=tree, capture_output=True, text=True, timeout=60,
                             env={"RCLIFY_LOCKS": locks, "PATH": "/usr/bin:/bin"})
        assert (run.returncode, run.stdout) == (0, "240000\n"), (locks, run.stderr)


def test_a_wrapper_over_a_wrapper_of_a_later_file_is_found(tmp_path):
    """A file read before the one defining the wrapper it calls (libuv's os390 `before_fork()` over
    `uv_mutex_lock`, defined in thread.c) still has its wrapper found: the vocabulary is read to
    a fixpoint over every parsed file, whatever their order.  a_fork.c names pthread_mutex_init,
    so it is parsed in the first round, before z_lock.c's wrapper is known."""
    (tmp_path / "a_fork.c").write_text(
        "#include <pthread.h>\nvoid my_lock(pthread_mutex_t *m);\nvoid my_unlock(pthread_mutex_t *m);\n"
        "static pthread_mutex_t g;\nstatic long n;\n"
        "void setup(void) { pthread_mutex_init(&g, NULL); }\n"
        "static void hold(void) { my_lock(&g); }\nstatic void release(void) { my_unlock(&g); }\n"
        "void bump(void)\n{\n    hold();\n    n++;\n    release();\n}\n")
    (tmp_path / "z_lock.c").write_text(
        "#include <pthread.h>\nvoid my_lock(pthread_mutex_t *m) { pthread_mutex_lock(m); }\n"
        "void my_unlock(pthread_mutex_t *m) { pthread_mutex_unlock(m); }\n")
    report = tmp_path.parent / f"{tmp_path.name}.json"
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tmp_path), "--dry-run", "-q",
                           "--report", str(report)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text())
    assert {w["name"] for w in data["wrappers"]} >= {"hold", "release", "my_lock", "my_unlock"}
    assert [(r["file"], r["function"], r["status"]) for r in data["regions"]] == [("a_fork.c", "bump", "extracted")]
