"""rclify.h's type guard: a pthread_mutex_* / pthread_cond_* call given an rcl_mutex_t * or an
rcl_cond_t * (a call the rewrite missed) must stop the build with a message naming the rcl_
function to call, where gcc only warns and the program would lock the wrong bytes; the same calls
on pthread types, and the header in C++, must compile as before.

The snippets are compiled as a build would: gcc -std=gnu11 -fsyntax-only with the flags
`python3 -m rclify flags --cflags` prints.
"""

import shutil
import subprocess
import sys

import pytest

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


@pytest.fixture(scope="module")
def cflags() -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "rclify", "flags", "--cflags"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def compile_c(tmp_path, cflags, body: str, compiler: str = "gcc", suffix: str = ".c", std: str = "gnu11",
              extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    src = tmp_path / f"t{suffix}"
    src.write_text(body)
    return subprocess.run([compiler, f"-std={std}", "-fsyntax-only", *extra, *cflags, str(src)],
                          capture_output=True, text=True)


def snippet(decls: str, call: str) -> str:
    return (
        "#define _GNU_SOURCE\n#include <rclify.h>\n#include <time.h>\n"
        f"int f(void)\n{{\n    struct timespec ts = {{ 0, 0 }};\n    (void)ts;\n{decls}\n    return {call};\n}}\n"
    )


DECLS = "    static {mutex} m;\n    static {cond} c;\n    static pthread_cond_t pc;\n    (void)m, (void)c, (void)pc;"
RCL = DECLS.format(mutex="rcl_mutex_t", cond="rcl_cond_t")
PTHREAD = DECLS.format(mutex="pthread_mutex_t", cond="pthread_cond_t")

# (call on the objects declared above, what the message must say)
ON_RCL = [
    ("pthread_mutex_lock(&m)", "pthread_mutex_lock() on an rcl_mutex_t *: call rcl_mutex_lock() instead"),
    ("pthread_mutex_timedlock(&m, &ts)",
     "pthread_mutex_timedlock() on an rcl_mutex_t *: call rcl_mutex_timedlock() instead"),
    ("pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts)",
     "pthread_mutex_clocklock() on an rcl_mutex_t *: call rcl_mutex_clocklock() instead"),
    ("pthread_mutex_unlock(&m)", "pthread_mutex_unlock() on an rcl_mutex_t *: call rcl_mutex_unlock() instead"),
    ("pthread_cond_wait(&c, &m)", "pthread_cond_wait() on an rcl_cond_t *: call rcl_cond_wait() instead"),
    # a missed mutex alone (the condvar is still a pthread one) is caught too
    ("pthread_cond_wait(&pc, &m)", "pthread_cond_wait() on an rcl_mutex_t *: call rcl_cond_wait() instead"),
    ("pthread_cond_timedwait(&pc, &m, &ts)",
     "pthread_cond_timedwait() on an rcl_mutex_t *: call rcl_cond_timedwait() instead"),
    ("pthread_cond_signal(&c)", "pthread_cond_signal() on an rcl_cond_t *: call rcl_cond_signal() instead"),
]


@needs_gcc
@pytest.mark.parametrize("call,message", ON_RCL, ids=[c for c, _ in ON_RCL])
def test_pthread_call_on_an_rcl_type_is_an_error(tmp_path, cflags, call, message):
    proc = compile_c(tmp_path, cflags, snippet(RCL, call))
    assert proc.returncode != 0, f"{call} on rcl types compiled:\n{proc.stderr}"
    assert message in proc.stderr, proc.stderr


@needs_gcc
def test_an_array_of_rcl_mutexes_and_a_pointer_to_const_are_caught(tmp_path, cflags):
    body = snippet("    static rcl_mutex_t locks[4];\n    const rcl_mutex_t *cm = &locks[1];\n    static int prio;",
                   "pthread_mutex_lock(locks) + pthread_mutex_getprioceiling(cm, &prio)")
    proc = compile_c(tmp_path, cflags, body)
    assert proc.returncode != 0
    assert "pthread_mutex_lock() on an rcl_mutex_t *: call rcl_mutex_lock() instead" in proc.stderr
    assert "pthread_mutex_getprioceiling() on an rcl_mutex_t *: call rcl_mutex_getprioceiling() / rcl_mutex_setprioceiling() instead" in proc.stderr


@needs_gcc
def test_the_same_calls_on_pthread_types_compile(tmp_path, cflags):
    calls = " + ".join(call for call, _ in ON_RCL)
    proc = compile_c(tmp_path, cflags, snippet(PTHREAD, calls), extra=("-Wall", "-Wextra", "-Werror"))
    assert proc.returncode == 0, proc.stderr


@needs_gcc
def test_the_functions_address_can_still_be_taken(tmp_path, cflags):
    body = snippet(
        PTHREAD + "\n    int (*lock)(pthread_mutex_t *) = pthread_mutex_lock;\n"
        "    int (*wait)(pthread_cond_t *, pthread_mutex_t *) = &pthread_cond_wait;",
        "lock(&m) + wait(&c, &m) + (pthread_mutex_unlock)(&m)",
    )
    proc = compile_c(tmp_path, cflags, body, extra=("-Wall", "-Wextra", "-Werror"))
    assert proc.returncode == 0, proc.stderr


@needs_gcc
def test_strict_c99_gets_an_error_too(tmp_path, cflags):
    """-std=c99 has no _Static_assert to carry the message: the name of the failing bit-field does."""
    body = "#include <rclify.h>\nint f(void)\n{\n    static rcl_mutex_t m;\n    return pthread_mutex_lock(&m);\n}\n"
    proc = compile_c(tmp_path, cflags, body, std="c99", extra=("-pedantic",))
    assert proc.returncode != 0
    assert "pthread_mutex_lock_on_an_rcl_type__see_rclify_h" in proc.stderr, proc.stderr
    ok = "#include <rclify.h>\nint f(pthread_mutex_t *m)\n{\n    return pthread_mutex_lock(m);\n}\n"
    proc = compile_c(tmp_path, cflags, ok, std="c99", extra=("-pedantic", "-Wall", "-Wextra", "-Werror"))
    assert proc.returncode == 0, proc.stderr


@needs_gcc
def test_the_guard_can_be_turned_off(tmp_path, cflags):
    """An interposer that defines pthread_mutex_lock itself after including rclify.h."""
    body = ("#define RCLIFY_NO_TYPE_GUARD\n#include <rclify.h>\n"
            "int pthread_mutex_lock(pthread_mutex_t *m)\n{\n    (void)m;\n    return 0;\n}\n")
    proc = compile_c(tmp_path, cflags, body, extra=("-Wall", "-Werror"))
    assert proc.returncode == 0, proc.stderr


def test_cpp_file_including_rclify_h_compiles(tmp_path, cflags):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed: the header's C++ compatibility cannot be checked")
    body = ("#include <rclify.h>\n#include <pthread.h>\n"
            "static rcl_mutex_t m = RCL_MUTEX_INITIALIZER(RCL_CONFIG_DEFAULT);\n"
            "static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;\n"
            "int f() { int (*lock)(pthread_mutex_t *) = pthread_mutex_lock;\n"
            "          return rcl_mutex_lock(&m) + rcl_mutex_unlock(&m) + lock(&pm) + pthread_mutex_unlock(&pm); }\n")
    proc = compile_c(tmp_path, cflags, body, compiler="g++", suffix=".cpp", std="c++11",
                     extra=("-Wall", "-Wextra", "-Werror"))
    assert proc.returncode == 0, proc.stderr
