"""What is read once gives what reading again gave: the SourceTree's texts (source_tree.py), the
cursor caches (ctext/cursors.py) and the token views (ctext/tokens.py) against the reads and the
libclang walks they replaced.  The transform's outputs are compared before and after by
scripts/bench_transform.py; these pin the equivalences themselves."""

import os
from pathlib import Path

import clang.cindex as ci

from rclify.ctext import cparse
from rclify.ctext.cursors import child_nodes, macro_uses_in, preorder, top_level
from rclify.ctext.preprocessor import includes, includes_named, quoted_includes
from rclify.ctext.tokens import tokenize, tokens_between
from rclify.ctext.source_tree import SourceTree

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "extract" / "wrapper_item_lock" / "input.c"


def test_the_source_tree_reads_as_read_text_did(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    odd = b"int a;\r\nint b;\rint c; /* \xff\xfe not UTF-8 */\n\xe9t\xc3\xa9\n"
    (root / "odd.c").write_bytes(odd)
    (root / "plain.h").write_text("#define X 1\n")
    files = [root / "odd.c", root / "plain.h"]
    tree = SourceTree(root, files)
    for f in files:
        assert tree.text(f) == f.read_text(errors="surrogateescape")
        assert tree.data(f) == f.read_bytes()
    assert tree.texts() == {"odd.c": (root / "odd.c").read_text(errors="surrogateescape"), "plain.h": "#define X 1\n"}
    link = tmp_path / "link"  # a root given through a symbolic link: resolved paths name the same file
    os.symlink(root, link)
    linked = SourceTree(link, [link / "odd.c"])
    assert linked.rel((root / "odd.c").resolve()) == linked.rel(link / "odd.c") == "odd.c"
    # a file named as libclang names it: a header of the tree (read from the tree, not from disk
    # again), or a system header, which is not the tree's
    assert linked.under(str((root / "plain.h").resolve())) == "plain.h"
    assert linked.data(linked.under(str(root / "plain.h"))) == b"#define X 1\n"
    assert linked.under("/usr/include/stdio.h") is None
    (root / "plain.h").write_text("changed on disk\n")
    assert tree.text(root / "plain.h") == "#define X 1\n"  # read once: what every step saw


def test_the_cursor_caches_walk_as_the_bindings_do():
    parsed = cparse.parse(FIXTURE, [])
    tu = parsed.tu
    for fn in top_level(tu).functions_in(parsed.path):
        assert list(preorder(fn)) == list(fn.walk_preorder())
        for node in fn.walk_preorder():
            assert child_nodes(node) == tuple(node.get_children())
    definitions = [c for c in tu.cursor.get_children() if c.kind == ci.CursorKind.FUNCTION_DECL and c.is_definition()
                   and c.location.file is not None and Path(c.location.file.name) == parsed.path]
    assert top_level(tu).functions_in(parsed.path) == definitions and definitions
    uses = [c for c in tu.cursor.get_children() if c.kind == ci.CursorKind.MACRO_INSTANTIATION
            and c.location.file is not None and c.location.file.name == str(parsed.path)]
    assert macro_uses_in(tu, parsed.path) == uses and uses


def test_tokens_of_a_span_are_the_span_tokenized():
    code = FIXTURE.read_text()
    start = code.index("{")
    end = code.index("}", start) + 1
    shifted = [(t.kind, t.text, t.start - start, t.end - start) for t in tokens_between(code, start, end)]
    assert shifted == [tuple(t) for t in tokenize(code[start:end])] and shifted
    listed = tokenize(code)
    listed.pop()  # the caller's own list: the shared tokens stay whole
    assert len(tokenize(code)) == len(listed) + 1


def test_includes_are_read_in_one_place():
    text = '#include <pthread.h>\n  #  include "sub/lock.h" // x\n#include"b.h"\n#define INCLUDE "no.h"\n'
    assert includes(text) == [("<", "pthread.h"), ('"', "sub/lock.h"), ('"', "b.h")]
    assert quoted_includes(text) == ["sub/lock.h", "b.h"]
    assert includes_named(text, {"lock.h"}) and not includes_named(text, {"pthread.h", "sub"})
