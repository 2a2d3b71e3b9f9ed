"""Preprocessor directives read as text (rclify/ctext/preprocessor.py)."""

from rclify.ctext.preprocessor import (conditional_around, conditional_block, define_around, guards_at, other_branches,
                                       splits_conditional)

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
    # an #else branch: the negation of what came before (an include guard's too: compiled only
    # when the file is included again)
    assert guards(b"int e") == ["#if !(!defined(Y_H))"]


def test_elif_and_else_branches_are_conditions_and_blocks_before_since_are_not():
    src = b"void f(void)\n{\n#if A /* c */\n  a();\n#elif defined(B)\n  b();\n#else\n  c();\n#endif\n}\n"
    assert guards_at(src, src.index(b"a()")) == ["#if A /* c */"]
    assert guards_at(src, src.index(b"b()")) == ["#if !(A) && (defined(B))"]
    assert guards_at(src, src.index(b"c()")) == ["#if !(A) && !(defined(B))"]
    wrapped = b"#ifdef OUTER\n" + src + b"#endif\n"
    assert guards_at(wrapped, wrapped.index(b"c()"), since=wrapped.index(b"void")) == ["#if !(A) && !(defined(B))"]
    assert other_branches(src, src.index(b"b()")) == [(src.index(b"/* c */") + 7, src.index(b"#elif")),
                                                      (src.index(b"#else") + 5, src.index(b"#endif"))]
    assert other_branches(src, src.index(b"a()"), since=src.index(b"}")) == []  # opened before since


def test_define_around_and_split_conditionals():
    text = "int x;\n#define LOCK(m) \\\n  pthread_mutex_lock(m)\nint y;\n"
    assert define_around(text, 3) == "#define LOCK(m)    pthread_mutex_lock(m)"
    assert define_around(text, 4) is None
    assert splits_conditional("a;\n#if X\nb;\n") and not splits_conditional("#if X\nb;\n#endif\n")


def test_comments_after_an_ifndef_do_not_make_the_guard_test_exponential():
    """libmicrohttpd's daemon.c hung the transform: a lazy comment pattern backtracked over every
    later `*/` when the line after the comments was no #define."""
    src = b"#ifndef X\n" + b"/* comment */\n" * 60 + b"int x;\n#endif\n"
    assert guards_at(src, src.index(b"int x")) == ["#ifndef X"]


BLOCKS = b"""void f(void)
{
#if THREADS
    check(x);
    lock(&m);
#endif
    work();
#if THREADS
    unlock(&m);
# if DEBUG
    trace();
# endif
    destroy(&m);
#endif
#ifdef A
    a();
#else
    lock(&m);
#endif
}
"""


def test_conditional_block_holds_other_statements_and_nested_blocks():
    at = BLOCKS.index(b"lock(&m);")
    block = conditional_block(BLOCKS, at, at + len(b"lock(&m);"))
    assert block is not None and block.line == "#if THREADS"
    assert BLOCKS[block.body_start:at].strip() == b"check(x);"
    assert BLOCKS[block.end:].startswith(b"    work();")
    assert conditional_around(BLOCKS, at, at + len(b"lock(&m);")) is None  # not alone in it
    at = BLOCKS.index(b"unlock(&m);")
    block = conditional_block(BLOCKS, at, at + len(b"unlock(&m);"))
    assert block is not None and BLOCKS[block.body_end - 20:block.body_end].strip().endswith(b"destroy(&m);")
    assert BLOCKS[block.end:].startswith(b"#ifdef A")


def test_conditional_block_refuses_else_branches_and_spans_with_directives():
    at = BLOCKS.rindex(b"lock(&m);")
    assert conditional_block(BLOCKS, at, at + 9) is None  # in an #else branch
    at = BLOCKS.index(b"a();")
    assert conditional_block(BLOCKS, at, at + 4) is None  # its block has an #else
    start, end = BLOCKS.index(b"unlock(&m);"), BLOCKS.index(b"destroy(&m);")
    assert conditional_block(BLOCKS, start, end) is None  # the span holds # if DEBUG ... # endif
