"""Where extracted sections run (rclify/transform/thread_state.py, placement.runs_on_caller_thread):
on the caller's thread whenever the analysis cannot show the section uses no thread-local state,
with the reason in the report; lock_config.h's per-section overrides have the last word."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rclify import lock_config
from rclify.transform.thread_safe_calls import external_cause

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = r"""
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t key;
static __thread int tls;
static long total;
static char buf[32];
extern long frobnicate(long);   /* defined nowhere the analysis can see */

static long via_key(void) { return (long)pthread_getspecific(key); }
static long helper(void) { return via_key() + 1; }
static long pure(long v) { return v * 2; }
static long (*volatile pointer)(void) = helper;

void sections(long v)
{
    pthread_mutex_lock(&m);          /* line 21: through a function pointer */
    total += pointer();
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 24: an external function rclify cannot see */
    total += frobnicate(v);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 27: libc known to be safe, and a pure function */
    memcpy(buf, "abc", 4);
    total += pure((long)strlen(buf)) + snprintf(buf, sizeof buf, "%ld", v);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 31: errno read in the section */
    total += errno;
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 34: a chain of the file's functions */
    total += helper();
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 37: a __thread variable */
    total += tls;
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 40: pthread_getspecific in an early exit's tail only */
    if (v < 0) {
        pthread_mutex_unlock(&m);
        total = (long)pthread_getspecific(key);
        return;
    }
    total++;
    pthread_mutex_unlock(&m);
}
"""

_KEY = "calls pthread_getspecific(), which acts on the calling thread itself (on a server it would be the server's thread)"
EXPECTED = {
    21: f"calls through the function pointer `pointer`, which may call helper(): calls helper() → via_key(), which {_KEY}",
    24: "calls frobnicate(), which rclify did not analyse (no definition in the analysed files, "
        "and no manual page of the C library)",
    27: "",
    31: "",  # errno: the runtime hands the caller's to the section and the section's back
    34: f"calls helper() → via_key(), which {_KEY}",
    37: "uses the thread-local variable tls",
    40: "",
}


def _transform(tree: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "-q", "-j", "1", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def _regions(tmp_path: Path, program: str = PROGRAM, config: str | None = None) -> dict[int, dict]:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "main.c").write_text(program)
    if config is not None:
        (tree / "lock_config.h").write_text(config)
    report = tmp_path / "report.json"
    proc = _transform(tree, "--dry-run", "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    return {r["line"]: r for r in json.loads(report.read_text())["regions"]}


def test_each_section_says_why_it_runs_on_its_callers_thread(tmp_path):
    regions = _regions(tmp_path)
    assert {line: r["thread_bound_because"] for line, r in regions.items()} == EXPECTED
    assert {line: r["runs_on_caller_thread"] for line, r in regions.items()} == \
        {line: bool(why) for line, why in EXPECTED.items()}


def test_a_program_that_calls_uselocale_keeps_locale_functions_on_their_thread(tmp_path):
    program = PROGRAM.replace("void sections", "void set_locale(locale_t l) { uselocale(l); }\nvoid sections")
    program = program.replace("#include <errno.h>", "#define _GNU_SOURCE\n#include <locale.h>\n#include <errno.h>")
    regions = _regions(tmp_path, program)
    line = next(line for line, r in regions.items() if "snprintf" in r["thread_bound_because"])
    assert regions[line]["runs_on_caller_thread"]


def test_lock_config_overrides_a_section_with_its_reason(tmp_path):
    config = lock_config.render([], [
        lock_config.SectionOverride("sections_1", True, "pointer only ever points at helper()"),
        lock_config.SectionOverride("sections_3", False, "keep it local while profiling"),
        lock_config.SectionOverride("nowhere_9", True, "a section that no longer exists"),
    ])
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "main.c").write_text(PROGRAM)
    (tree / "lock_config.h").write_text(config)
    report = tmp_path / "report.json"
    proc = _transform(tree, "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    assert "lock_config.h overrides sections that do not exist: nowhere_9" in proc.stdout
    data = json.loads(report.read_text())
    regions = {r["line"]: r for r in data["regions"]}
    assert not regions[21]["runs_on_caller_thread"]
    assert regions[21]["thread_bound_because"] == EXPECTED[21]  # what the analysis said, kept
    assert regions[21]["placement_override"] == {
        "runs": "on-server", "reason": "pointer only ever points at helper()", "section": "sections_1"}
    assert regions[27]["runs_on_caller_thread"] and regions[27]["placement_override"]["runs"] == "on-caller"
    assert data["section_overrides_unused"] == ["nowhere_9"]
    text = (tree / "main.c").read_text()
    assert "rcl_execute_local(&m, rclify_cs_sections_3" in text
    assert "RCL_EXECUTE(&m, rclify_cs_sections_1" in text
    kept = lock_config.parse_sections((tree / "lock_config.h").read_text())
    assert {o.section for o in kept} == {"sections_1", "sections_3", "nowhere_9"}  # the user's lines stay


def test_an_override_without_its_reason_is_refused(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "main.c").write_text(PROGRAM)
    (tree / "lock_config.h").write_text("#define RCLIFY_SECTION_sections_1_ON_SERVER\n")
    proc = _transform(tree)
    assert proc.returncode == 2
    assert "lock_config.h:1: RCLIFY_SECTION_sections_1_ON_SERVER needs its reason" in proc.stderr
    assert (tree / "main.c").read_text() == PROGRAM


@pytest.mark.parametrize("name, why", [
    ("memcpy", None), ("__builtin___memcpy_chk", None), ("__memcpy_chk", None), ("malloc", None),
    ("__atomic_fetch_add", None), ("__builtin_expect", None), ("__builtin_va_start", None),
    ("fprintf", None), ("__printf_chk", None), ("__isoc99_sscanf", None), ("exit", None), ("__assert_fail", None),
    ("usleep", None), ("read", None), ("sem_wait", None),  # they may block: the server stays live
    ("pthread_create", "starts a process or thread that continues from, or inherits, the calling thread"),
    ("raise", "signals the calling thread"), ("strerror", "thread-local"), ("longjmp", "stack frames"),
    ("pthread_self", "acts on the calling thread itself"), ("flockfile", "belongs to the calling thread"),
    ("deflate", "no manual page of the C library"),
])
def test_external_functions_are_judged_by_the_platforms_documentation(name, why):
    cause = external_cause(name)
    assert (cause is None) if why is None else (why in cause), cause


def test_classes_that_bind_only_in_some_programs():
    assert external_cause("snprintf") is None and "locale" in external_cause("snprintf", {"uselocale"})
    assert external_cause("isspace") is None and "locale" in external_cause("isspace", {"uselocale"})
    assert external_cause("fputs") is None and "flockfile" in external_cause("fputs", {"flockfile"})
    # a buffer of the calling thread's dies with the process on a path that ends it
    assert external_cause("strerror", ending=True) is None and external_cause("longjmp", ending=True)


WAITING = r"""
#include <pthread.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int ready, count;

static void wait_ready(void) { while (!ready) pthread_cond_wait(&c, &m); }
static void bump(void) { count++; }

void sections(void)
{
    pthread_mutex_lock(&m);          /* line 13: waits itself */
    while (!ready)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 17: waits through a function of the file */
    wait_ready();
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 20: signals only */
    bump();
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
}
"""


def test_sections_that_wait_on_a_condvar_never_run_on_a_combiner(tmp_path):
    """A combiner runs other threads' sections and cannot block for them: a section that reaches a
    condvar wait (directly or through the file's functions) is called with RCL_EXECUTE_MAY_WAIT,
    which runs it on its own thread under combining locks; the report says which."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "main.c").write_text(WAITING)
    report = tmp_path / "report.json"
    proc = _transform(tree, "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    regions = {r["line"]: r for r in json.loads(report.read_text())["regions"]}
    assert {line: r["waits_on_condvar"] for line, r in regions.items()} == {13: True, 17: True, 20: False}
    text = (tree / "main.c").read_text()
    assert "RCL_EXECUTE_MAY_WAIT(&m, rclify_cs_sections_1" in text
    assert "RCL_EXECUTE_MAY_WAIT(&m, rclify_cs_sections_2" in text
    assert "RCL_EXECUTE(&m, rclify_cs_sections_3" in text


def test_definitions_in_files_the_build_does_not_compile_are_not_followed(tmp_path):
    """libuv defines uv_mutex_lock in src/unix/thread.c and in src/win/thread.c (with
    EnterCriticalSection); the compile database says which one this build runs."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "helper.h").write_text("long helper(long v);\n")
    (tree / "main.c").write_text(
        '#include <pthread.h>\n#include "helper.h"\nstatic pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n'
        "static long total;\nvoid add(long v)\n{\n    pthread_mutex_lock(&m);\n    total += helper(v);\n"
        "    pthread_mutex_unlock(&m);\n}\n")
    (tree / "unix.c").write_text('#include "helper.h"\nlong helper(long v) { return v * 2; }\n')
    (tree / "win.c").write_text('#include "helper.h"\nstatic __thread long last;\n'
                                "long helper(long v) { last = v; return v * 2; }\n")
    entries = [{"directory": str(tree), "file": name, "arguments": ["cc", "-c", name]} for name in ("main.c", "unix.c")]
    (tree / "compile_commands.json").write_text(json.dumps(entries))
    report = tmp_path / "report.json"
    proc = _transform(tree, "--dry-run", "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    (region,) = json.loads(report.read_text())["regions"]
    assert region["status"] == "extracted"
    assert (region["runs_on_caller_thread"], region["thread_bound_because"]) == (False, "")

def test_a_lock_wrappers_work_counts_where_its_section_runs(tmp_path):
    """An unlock wrapper's work runs in the section (rclify_work_of_<wrapper>): errno read there
    binds the section to its caller's thread when it uses the caller's thread (pthread_self); a wrapper
    whose work is plain does not."""
    program = (
        "#include <pthread.h>\n"
        "static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\nstatic pthread_t last;\nstatic int n, closed;\n"
        "static void leave_noting_thread(void) { last = pthread_self(); pthread_mutex_unlock(&m); }\n"
        "static void leave_closing(void) { closed = 1; pthread_mutex_unlock(&m); }\n"
        "void f(void)\n{\n    pthread_mutex_lock(&m);\n    n++;\n    leave_noting_thread();\n"
        "    pthread_mutex_lock(&m);\n    n++;\n    leave_closing();\n}\n")
    regions = _regions(tmp_path, program)
    assert {line: r["thread_bound_because"] for line, r in regions.items()} == {
        9: "calls leave_noting_thread(), which calls pthread_self(), which acts on the calling thread itself "
           "(on a server it would be the server's thread)", 12: ""}


DELEGATION = r"""
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ops { long (*get)(long); long (*put)(long); };
static long get1(long v) { return v + 1; }
static long put1(long v) { return v - 1; }
static long tls_get(long v) { return v + (long)pthread_self(); }
static const struct ops table = { .get = get1, .put = put1 };
static const struct ops table2 = { get1, put1 };
static const struct ops bound_table = { tls_get, put1 };
static long (*chosen)(long) = get1;
static long (*escaped)(long) = get1;
long (*exported)(long);
static jmp_buf env;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total;
static const char *kept;

static void set_chosen(long (*f)(long)) { chosen = f; }
void set_exported(long (*f)(long)) { exported = f; }
static void die(const char *what, int err) { fprintf(stderr, "%s: %s\n", what, strerror(err)); exit(1); }
static void bail(int err) { longjmp(env, err); }
static void *run(void *arg) { return arg; }

void sections(long v)
{
    long (**where)(long) = &escaped;
    set_chosen(put1);
    pthread_mutex_lock(&m);          /* line 35: tables, designated and positional; a static pointer */
    total += table.get(v) + table2.put(v) + chosen(v);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 38: a table whose function uses the calling thread */
    total += bound_table.get(v);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 41: a pointer whose address is taken */
    total += escaped(v) + (*where == 0);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 44: a pointer code outside the tree may set */
    total += exported(v);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 47: print, write, read, sleep; an error path that ends the process */
    printf("%ld\n", total);
    if (write(1, "x", 1) != 1 || read(0, &total, 0) < 0)
        die("io", 5);
    usleep(1);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 53: strerror's buffer kept past the section */
    kept = strerror((int)v);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 56: a longjmp only a failed signal reaches */
    int rc = pthread_mutex_unlock(&m);
    if (rc != 0)
        bail(rc);
    pthread_mutex_lock(&m);          /* line 60: a longjmp on a path of its own */
    if (v < -100)
        bail(1);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 64: clocks: the process's, then the thread's */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 68 */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&m);          /* line 71: a thread started from the section */
    pthread_t t;
    pthread_create(&t, NULL, run, NULL);
    pthread_mutex_unlock(&m);
}
"""

_SELF = "calls pthread_self(), which acts on the calling thread itself (on a server it would be the server's thread)"
_JUMP = "calls bail(), which calls longjmp(), which jumps into or saves the calling thread's stack frames"
DELEGATION_EXPECTED = {
    35: "",
    38: f"calls through the function pointer `bound_table.get`, which may call tls_get(): calls tls_get(), which {_SELF}",
    41: "calls through the function pointer `escaped`, whose targets are not known: its address is taken "
        "(what is stored through it is not followed)",
    44: "calls through the function pointer `exported`, whose targets are not known: f (a parameter "
        "of set_exported()): it is a parameter of set_exported(), which code outside the tree may call",
    47: "",
    53: "calls strerror(), which returns a buffer or sets a variable of the calling thread (glibc keeps it thread-local)",
    56: "",
    60: _JUMP,
    64: "",
    68: "calls clock_gettime(), which asks about the calling thread (its CPU clock or usage)",
    71: "calls pthread_create(), which starts a process or thread that continues from, or inherits, the calling "
        "thread (its signal mask, CPU affinity, scheduling; a server's block every signal)",
}


def test_what_lets_a_section_leave_its_thread(tmp_path):
    """The platform's documentation for the C library, points-to sets for function pointers,
    paths that end the process, and error branches of lock calls the runtime makes fatal away
    from the caller's thread (docs/transform.md, "Where a section runs")."""
    regions = _regions(tmp_path, DELEGATION)
    assert {line: r["thread_bound_because"] for line, r in regions.items()} == DELEGATION_EXPECTED


def test_a_function_the_tree_defines_is_judged_by_its_body_whatever_the_c_library_calls_so(tmp_path):
    """error() is the C library's (error(3)) and may run anywhere; a tree that defines its own
    error() with a thread-local variable has sections that call it kept home."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "log.h").write_text("void error(int status, int errnum, const char *fmt);\n")
    (tree / "log.c").write_text('#include "log.h"\nstatic __thread int last;\n'
                                "void error(int status, int errnum, const char *fmt) { last = status + errnum + (fmt != 0); }\n")
    (tree / "main.c").write_text('#include <pthread.h>\n#include "log.h"\n'
                                 "static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\nstatic int n;\n"
                                 'void f(void) { pthread_mutex_lock(&m); n++; if (n > 100) error(0, 1, "x"); '
                                 "pthread_mutex_unlock(&m); }\n")
    report = tmp_path / "report.json"
    proc = _transform(tree, "--dry-run", "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    (region,) = json.loads(report.read_text())["regions"]
    assert region["thread_bound_because"] == "calls error(), which uses the thread-local variable last"
