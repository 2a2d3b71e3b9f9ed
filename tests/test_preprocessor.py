"""Preprocessor directives read as text (rclify/ctext/preprocessor.py)."""

from rclify.ctext.preprocessor import define_around, guards_at, splits_conditional

SOURCE = b"""#ifndef X_H
#define X_H
#ifdef HAVE_A
int a;
#endif
int b;
#if !defined(Y_H)
#define Y_H /* guard */
int c;
#else
int e;
#endif
#ifndef Z
#define Z 1
int d;
#endif
#endif
"""


def guards(name: bytes):
    return guards_at(SOURCE, SOURCE.index(name))


def test_include_guards_are_not_conditions():
    assert guards(b"int b") == []
    assert guards(b"int c") == []


def test_real_conditions_are_kept_inside_a_guard():
    assert guards(b"int a") == ["#ifdef HAVE_A"]
    assert guards(b"int d") == ["#ifndef Z"]  # `#define Z 1` has a value: a condition, not a guard
    assert guards(b"int e") is None  # an #else branch is not reproduced


def test_define_around_and_split_conditionals():
    text = "int x;\n#define LOCK(m) \\\n  pthread_mutex_lock(m)\nint y;\n"
    assert define_around(text, 3) == "#define LOCK(m)    pthread_mutex_lock(m)"
    assert define_around(text, 4) is None
    assert splits_conditional("a;\n#if X\nb;\n") and not splits_conditional("#if X\nb;\n#endif\n")
