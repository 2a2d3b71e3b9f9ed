"""Where extracted sections run (rclify/transform/thread_state.py, placement.runs_on_caller_thread):
on the caller's thread whenever the analysis cannot show the section uses no thread-local state,
with the reason in the report; lock_config.h's per-section overrides have the last word."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rclify import lock_config
from rclify.transform.thread_safe_calls import allowed

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

EXPECTED = {
    21: "calls through a function pointer `pointer`",
    24: "calls frobnicate(), which rclify did not analyse (no definition in the analysed files)",
    27: "",
    31: "uses errno",
    34: "calls helper() → via_key(), which calls pthread_getspecific()",
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


@pytest.mark.parametrize("name, ok", [
    ("memcpy", True), ("__builtin___memcpy_chk", True), ("__memcpy_chk", True), ("malloc", True),
    ("__atomic_fetch_add", True), ("__builtin_expect", True), ("__builtin_va_start", False),
    ("fprintf", False), ("usleep", False), ("pthread_create", False), ("raise", False),
])
def test_the_allowlist(name, ok):
    assert allowed(name) is ok


def test_locale_functions_are_refused_when_threads_have_their_own_locale():
    assert allowed("snprintf") and not allowed("snprintf", per_thread_locale=True)
    assert allowed("isspace") and not allowed("isspace", per_thread_locale=True)


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
    binds the section to its caller's thread; a wrapper whose work is plain does not."""
    program = (
        "#include <errno.h>\n#include <pthread.h>\n"
        "static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\nstatic int last_err, n, closed;\n"
        "static void leave_noting_errno(void) { last_err = errno; pthread_mutex_unlock(&m); }\n"
        "static void leave_closing(void) { closed = 1; pthread_mutex_unlock(&m); }\n"
        "void f(void)\n{\n    pthread_mutex_lock(&m);\n    n++;\n    leave_noting_errno();\n"
        "    pthread_mutex_lock(&m);\n    n++;\n    leave_closing();\n}\n")
    regions = _regions(tmp_path, program)
    assert {line: r["thread_bound_because"] for line, r in regions.items()} == {
        9: "calls leave_noting_errno(), which uses errno", 12: ""}
