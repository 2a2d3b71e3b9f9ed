"""The tree's declaration macros given to spatch (rclify/ctext/tree_macros.py)."""

import shutil

import pytest

from rclify.ctext.spatch import MACRO_FILE
from rclify.ctext.tree_macros import declaration_macros, loop_header_macros, write_macro_file
from rclify.transform.discover import discover

HEADER = """\
#if defined(_WIN32)
#  define API_EXPORT __declspec(dllexport) extern
#  define THREAD_CALL __stdcall
#  define NORETURN __declspec(noreturn)
#elif defined(__sun)
#  define API_EXPORT __global
#  define THREAD_CALL
#  define NORETURN _Noreturn
#else
#  define API_EXPORT __attribute__((visibility("default"))) extern
#  define THREAD_CALL /* nothing */
#  define NORETURN __attribute__((__noreturn__))
#endif
#define PUBLIC API_EXPORT
#define RETURN_TYPE void *
#define WIDE __int64
#define COUNT 4
#define STATIC_INLINE static inline
#ifndef HEADER_H
#define HEADER_H
#endif
#define EMPTY_FLAG
#define CHOSEN(x) __attribute__((x))
#ifdef DEBUG
#  define MAYBE_VALUE 1
#else
#  define MAYBE_VALUE
#endif
"""


def test_only_macros_that_decorate_in_every_definition_are_chosen():
    names = declaration_macros({"h.h": HEADER})
    # types, values, function-like macros, empty-only macros (guards, flags) and a macro that is a
    # value in one branch are left to spatch
    assert names == ["API_EXPORT", "NORETURN", "PUBLIC", "STATIC_INLINE", "THREAD_CALL"]


def test_the_macro_file_adds_them_to_ours(tmp_path):
    path = write_macro_file(MACRO_FILE, ["NORETURN"], tmp_path)
    text = path.read_text()
    assert text.startswith(MACRO_FILE.read_text()) and text.endswith("#define NORETURN\n")


@pytest.mark.skipif(shutil.which("spatch") is None, reason="spatch (coccinelle) not installed")
def test_a_function_after_a_declaration_macro_keeps_its_sites(tmp_path):
    """libmicrohttpd's `_MHD_NORETURN static void f()`: without the tree's macros spatch stops at
    the line and reports the file; with them the file parses and its lock calls are sites."""
    (tmp_path / "h.h").write_text(HEADER)
    (tmp_path / "d.c").write_text(
        '#include <pthread.h>\n#include <stdlib.h>\n#include "h.h"\n'
        "static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\nstatic int n;\n"
        "NORETURN static void die(void) { abort(); }\n"
        "PUBLIC int count(void) {\n  pthread_mutex_lock(&m);\n  n++;\n  pthread_mutex_unlock(&m);\n  return n;\n}\n"
        "static void *THREAD_CALL run(void *a) {\n  pthread_mutex_lock(&m);\n  if (n < 0) die();\n"
        "  pthread_mutex_unlock(&m);\n  return a;\n}\n")
    files = [tmp_path / "d.c", tmp_path / "h.h"]
    plain = discover(tmp_path, files, macro_file=MACRO_FILE)
    assert "d.c" in plain.failures  # what the macros fix
    macros = write_macro_file(MACRO_FILE, declaration_macros({"h.h": HEADER}), tmp_path)
    found = discover(tmp_path, files, macro_file=macros)
    assert found.failures == {}
    assert discover(tmp_path, files).sites == found.sites  # by default, discover reads the files' macros
    assert sorted((s.kind, s.line) for s in found.sites if s.file == "d.c" and s.kind in ("lock", "unlock")) == \
        [("lock", 8), ("lock", 14), ("unlock", 10), ("unlock", 16)]


SCOPED_H = """\
#define SYNC(m) SYNC_1(m, __LINE__)
#define SYNC_1(m, line) SYNC_2(m, line)
#define SYNC_2(m, line) for (int i_ ## line = 0; i_ ## line ? (unlock(&(m)), 0) : (lock(&(m)), 1); i_ ## line = 1) \\
        for (int j_ ## line = 0; !j_ ## line; j_ ## line = 1)
#define WITH_LOCK(m) for (int i_ = (lock(&(m)), 0); !i_; unlock(&(m)), i_ = 1)
#define until(c) while (!(c))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define CALL_TWICE(f) f(); f()
#ifdef A
#  define MAYBE(m) for (;;)
#else
#  define MAYBE(m) if (m)
#endif
"""


def test_loop_header_macros_through_chains():
    assert loop_header_macros({"s.h": SCOPED_H}) == {"SYNC": ("m",), "SYNC_1": ("m", "line"),
                                                    "SYNC_2": ("m", "line"), "WITH_LOCK": ("m",)}


@pytest.mark.skipif(shutil.which("spatch") is None, reason="spatch (coccinelle) not installed")
def test_a_scoped_lock_macro_from_a_header_parses_as_a_loop(tmp_path):
    """xz's mythread_sync(m) { ... } in a file that does not define it: spatch reads the use as a
    loop with the macro file, and the calls in the block are sites."""
    (tmp_path / "s.h").write_text(SCOPED_H)
    (tmp_path / "u.c").write_text(
        '#include <pthread.h>\n#include "s.h"\nstatic pthread_mutex_t m;\nstatic pthread_cond_t c;\nint n;\n'
        "void f(void) {\n  SYNC(m) {\n    n++;\n    pthread_cond_signal(&c);\n  }\n}\n")
    files = [tmp_path / "u.c", tmp_path / "s.h"]
    assert "u.c" in discover(tmp_path, files, macro_file=MACRO_FILE).failures
    found = discover(tmp_path, files)
    assert found.failures == {} and ("cond_signal", 9) in {(s.kind, s.line) for s in found.sites}
