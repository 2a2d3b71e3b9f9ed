"""The compile check's staging copy and what a file that fails there costs (issue 37):
  * the copy holds every file the checked units include, whatever its name (`.inc`, `.incl`);
  * a failure message is gcc's error, not a warning printed before it;
  * a file that fails after the rewrite costs its own regions: a shared header it includes stays
    rewritten for the other files when its original text compiles with it, and is frozen with it
    (the old rule) when it does not, so that the tree stays consistent either way.
Each transformed tree is built with gcc against the runtime and run."""

import subprocess
import sys
from pathlib import Path

from rclify.runtime_build import build_runtime, cflags, libs
from rclify.transform.compile_check import compiles

QUEUE_H = """#include <pthread.h>
struct queue { pthread_mutex_t lock; int n; };
void queue_push(struct queue *q, int v);
int queue_len(struct queue *q);
"""

QUEUE_C = """#include "queue.h"
#include "steps.inc"
void queue_push(struct queue *q, int v)
{
    pthread_mutex_lock(&q->lock);
    q->n += v + QUEUE_STEP;
    pthread_mutex_unlock(&q->lock);
}
"""

LEN_C = """#include "queue.h"
int queue_len(struct queue *q)
{
    int n;
    pthread_mutex_lock(&q->lock);
    n = q->n;
    pthread_mutex_unlock(&q->lock);
    return n;
}
"""

# true of glibc's pthread_mutex_t on x86-64 and of no runtime lock type: compiles only unchanged
ABI_C = """#include "queue.h"
static pthread_mutex_t probe;
_Static_assert(sizeof probe == sizeof(pthread_mutex_t) && sizeof probe == 40, "glibc x86-64 mutex");
int abi_ok(void) { return 1; }
"""

# as ABI_C, and it locks the header's lock: its original text cannot compile with the header rewritten
ABI_LOCKING_C = ABI_C.replace("int abi_ok(void) { return 1; }", """int abi_ok(void) { return 1; }
int queue_empty(struct queue *q)
{
    int empty;
    pthread_mutex_lock(&q->lock);
    empty = q->n == 0;
    pthread_mutex_unlock(&q->lock);
    return empty;
}""")

MAIN_C = """#include <stdio.h>
#include "queue.h"
static struct queue q = { PTHREAD_MUTEX_INITIALIZER, 0 };
int abi_ok(void);
int main(void) { queue_push(&q, 2); queue_push(&q, 3); printf("%d %d\\n", queue_len(&q), abi_ok()); return 0; }
"""


def _tree(tmp_path: Path, abi: str = ABI_C) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    files = {"queue.h": QUEUE_H, "queue.c": QUEUE_C, "steps.inc": "#define QUEUE_STEP 1\n", "len.c": LEN_C,
             "abi.c": abi, "main.c": MAIN_C}
    for name, text in files.items():
        (tree / name).write_text(text)
    return tree


def _transform(tree: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "-q", "-j", "2"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc


def _runs(tree: Path) -> str:
    """The tree built against the runtime and run: its output."""
    build_runtime()
    binary = tree / "prog"
    subprocess.run(["gcc", "-std=gnu11", f"-I{tree}", *cflags(), *sorted(map(str, tree.glob("*.c"))), *libs(),
                    "-o", str(binary)], check=True, capture_output=True, text=True)
    return subprocess.run([str(binary)], capture_output=True, text=True, timeout=60, check=True).stdout


def test_a_file_included_under_any_name_is_staged_and_its_includer_extracted(tmp_path):
    tree = _tree(tmp_path)
    proc = _transform(tree)
    assert "steps.inc" not in proc.stdout, proc.stdout  # no longer a missing include
    assert "rclify_cs_queue_push" in (tree / "queue.c").read_text()
    assert "rclify_cs_queue_len" in (tree / "len.c").read_text()
    assert _runs(tree) == "7 1\n"


def test_one_failing_includer_leaves_the_shared_header_rewritten_for_the_others(tmp_path):
    tree = _tree(tmp_path)
    proc = _transform(tree)
    assert "left unchanged: abi.c: does not compile after the rewrite: abi.c:3:1: error: static assertion failed" \
        in proc.stdout, proc.stdout
    assert "(alone: it compiles unchanged with the rewritten headers it includes" in proc.stdout
    assert (tree / "abi.c").read_text() == ABI_C
    assert "pthread_mutex_t" not in (tree / "queue.h").read_text()  # rewritten, not frozen
    for name in ("queue.h", "len.c", "main.c", "queue.c"):
        assert f"left unchanged: {name}" not in proc.stdout, proc.stdout
    assert "2 regions: 2 extracted" in proc.stdout, proc.stdout
    assert _runs(tree) == "7 1\n"


def test_a_failing_file_that_uses_the_headers_lock_still_freezes_it_with_its_includers(tmp_path):
    tree = _tree(tmp_path, ABI_LOCKING_C)
    proc = _transform(tree)
    assert "left unchanged: abi.c: does not compile after the rewrite" in proc.stdout, proc.stdout
    assert "(alone:" not in proc.stdout
    for name in ("queue.h", "len.c", "main.c", "queue.c"):
        assert f"left unchanged: {name}: " in proc.stdout, proc.stdout
    assert (tree / "queue.h").read_text() == QUEUE_H
    assert _runs(tree) == "7 1\n"


def test_a_compile_failure_names_the_error_not_a_warning_printed_before_it(tmp_path):
    (tmp_path / "w.c").write_text('int f(void) { int unused_int = 1.5e400; return 0; }\n#include "gone.incl"\n')
    ok, first = compiles(tmp_path, "w.c", [])
    assert not ok
    assert "fatal error: gone.incl: No such file or directory" in first, first
    assert "warning" not in first, first
