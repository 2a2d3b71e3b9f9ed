"""The cursors listed in C (rclify/ctext/cursor_lists.c) are the bindings' own: the same children in
the same order with the same extents, the same top-level cursors with the same files."""

import subprocess

import clang.cindex as ci
import pytest

from rclify.ctext import cparse, cursor_lists
from rclify.ctext.cursors import child_nodes, macro_use_ranges, macro_uses_in, offsets, preorder, top_level
from rclify.errors import BuildError, ToolMissingError

K = ci.CursorKind

SOURCE = r"""
#include <pthread.h>
#include <stdio.h>
#include "local.h"

#define LOCK(m) pthread_mutex_lock(m)
#define UNLOCK(m) pthread_mutex_unlock(m)

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int counter;

struct pair { int a, b; };

static int bump(int by)
{
    int seen;
    LOCK(&m);
    counter += by + HEADER_CONSTANT;
    seen = counter;
    UNLOCK(&m);
    return seen;
}

int main(void)
{
    struct pair p = { 1, 2 };
    for (int i = 0; i < 3; i++)
        printf("%d\n", bump(p.a + i));
    return header_function(p.b);
}
"""

HEADER = r"""
#define HEADER_CONSTANT 3
static inline int header_function(int x) { return x + HEADER_CONSTANT; }
"""


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    root = tmp_path_factory.mktemp("tree")
    (root / "local.h").write_text(HEADER)
    (root / "main.c").write_text(SOURCE)
    return cparse.parse(root / "main.c", [])


def _bindings_preorder(cursor):
    yield cursor
    for child in cursor.get_children():
        yield from _bindings_preorder(child)


def _described(cursor):
    extent = cursor.extent
    return (cursor.kind, cursor.spelling, extent.start.offset, extent.end.offset,
            extent.start.file.name if extent.start.file else None)


def test_children_are_the_bindings_children_with_their_offsets(parsed):
    for fn in top_level(parsed.tu).functions_in(parsed.path):
        ours = preorder(fn)
        theirs = list(_bindings_preorder(fn))
        assert [_described(c) for c in ours] == [_described(c) for c in theirs]
        assert len(ours) > 20
        for node in ours:
            assert offsets(node) == (node.extent.start.offset, node.extent.end.offset)
            assert node.translation_unit is parsed.tu  # each keeps its unit, as the bindings' do
            assert child_nodes(node) == tuple(node.get_children())


def test_top_level_is_the_bindings_top_level(parsed):
    tu = parsed.tu
    theirs = list(tu.cursor.get_children())

    def file_of(c):
        return c.location.file.name if c.location.file else None

    listed = top_level(tu)
    assert [(f, c.spelling, c.extent.start.offset) for f, c in listed.function_definitions] == \
        [(file_of(c), c.spelling, c.extent.start.offset) for c in theirs
         if c.kind == K.FUNCTION_DECL and c.is_definition()]
    assert {name for _, name in [(f, c.spelling) for f, c in listed.function_definitions]} == \
        {"bump", "main", "header_function"}
    definitions = [c for c in theirs if c.kind == K.MACRO_DEFINITION]
    assert len(definitions) > 500  # the system headers' too
    assert [(d.file, d.name, d.start) for d in listed.macro_definitions] == \
        [(file_of(c), c.spelling, c.extent.start.offset) for c in definitions]
    assert [listed.cursor(d.row) for d in listed.macro_definitions] == definitions
    for path in (parsed.path, parsed.path.parent / "local.h"):
        expected = [c for c in theirs if c.kind == K.MACRO_INSTANTIATION and file_of(c) == str(path)]
        assert [(c.spelling, c.extent.start.offset) for c in macro_uses_in(tu, path)] == \
            [(c.spelling, c.extent.start.offset) for c in expected]
        assert macro_use_ranges(tu, path) == [(c.extent.start.offset, c.extent.end.offset) for c in expected]
    assert {c.spelling for c in macro_uses_in(tu, parsed.path)} >= {"LOCK", "UNLOCK", "PTHREAD_MUTEX_INITIALIZER"}


def test_a_listing_larger_than_its_first_buffer_is_whole(parsed):
    """The C side counts past the room it was given; the caller lists again with room for all
    (the first buffers here are far too small, as a unit or a function larger than the defaults
    would find them)."""
    tu = parsed.tu
    everything = [K.MACRO_DEFINITION, K.MACRO_INSTANTIATION, K.FUNCTION_DECL, K.TYPEDEF_DECL, K.VAR_DECL,
                  K.STRUCT_DECL, K.INCLUSION_DIRECTIVE]
    wanted = {k.value for k in everything}
    expected = [(c.kind.value, c.extent.start.offset) for c in tu.cursor.get_children() if c.kind.value in wanted]
    assert len(expected) > 1000
    for capacity in (1, 16384):
        rows = cursor_lists.top_level(tu, everything, capacity=capacity).rows
        assert [(kind, start) for kind, _, start, *_ in rows] == expected
    names = [c.spelling for c in tu.cursor.get_children() if c.kind == K.MACRO_DEFINITION]
    assert cursor_lists.top_level_spellings(tu, K.MACRO_DEFINITION, capacity=16) == names
    main = next(c for c in top_level(tu).functions_in(parsed.path) if c.spelling == "main")
    body = next(c for c in main.get_children() if c.kind == K.COMPOUND_STMT)
    for capacity in (1, 64):
        assert [c.kind for c, _, _ in cursor_lists.children(body, capacity=capacity)] == \
            [c.kind for c in body.get_children()]
        assert [row[0].kind for row in cursor_lists.subtree(body, capacity=capacity)] == \
            [c.kind for c in _bindings_breadth_first(body)]


def _bindings_breadth_first(cursor):
    nodes = [cursor]
    for node in nodes:
        nodes.extend(node.get_children())
    return nodes


def test_the_lister_is_compiled_into_the_users_cache(tmp_path):
    """A fresh cache gets the library compiled once; a missing compiler is said clearly."""
    script = ("from rclify.ctext import cursor_lists as c\n"
              "print(c._built())\n")
    env = {"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    import sys
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    built = first.stdout.strip()
    assert built.startswith(str(tmp_path / "cache" / "rclify")) and built.endswith(".so")
    again = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert again.stdout.strip() == built
    missing = subprocess.run([sys.executable, "-c", script], env={**env, "CC": "no-such-cc"},
                             capture_output=True, text=True)
    assert missing.returncode != 0 and "ToolMissingError" in missing.stderr and "no-such-cc" in missing.stderr


def test_a_compiler_that_fails_is_a_build_error(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "badcc"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'badcc: cannot compile' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    monkeypatch.setattr("rclify.runtime_build.CACHE_DIR", tmp_path / "cache")
    with pytest.raises(BuildError, match="cannot compile"):
        cursor_lists._built()
    assert not any((tmp_path / "cache").iterdir())  # no half-written library left behind
    monkeypatch.setenv("CC", str(tmp_path / "nowhere"))
    with pytest.raises(ToolMissingError):
        cursor_lists._built()


def test_a_subtree_larger_than_the_first_listing_and_a_node_reached_again(tmp_path):
    """A function of thousands of nodes is listed whole (the C side asks for more room); a node
    reached through another Cursor object (the function through a call's `referenced`) gets the
    same children, listed once."""
    statements = "\n".join(f"    total += values[{i}] * {i} + (total >> 3);" for i in range(400))
    (tmp_path / "big.c").write_text(f"int values[400];\nint big(void)\n{{\n    int total = 0;\n{statements}\n"
                                    "    return total;\n}\nint caller(void) { return big(); }\n")
    parsed = cparse.parse(tmp_path / "big.c", [])
    big, caller = top_level(parsed.tu).functions_in(parsed.path)
    ours = preorder(big)
    assert len(ours) > 4000
    assert [_described(c) for c in ours] == [_described(c) for c in _bindings_preorder(big)]
    call = next(n for n in preorder(caller) if n.kind == K.CALL_EXPR)
    again = call.referenced
    assert again == big and again is not big
    assert child_nodes(again) is child_nodes(big)
