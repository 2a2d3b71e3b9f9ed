"""The lock vocabulary (rclify/transform/vocabulary.py): the tree's lock macros and wrapper
functions inferred with libclang, and statements read as lock operations through them.

Uses the same fixture tree as tests/test_discover.py (tests/fixtures/smpl/tree/)."""

from pathlib import Path

import pytest

from rclify.ctext.tokens import call_arguments, normalize, split_args
from rclify.transform.analyse import analyse, regions_of
from rclify.transform.vocabulary import classify, substitute

TREE = Path(__file__).parent / "fixtures" / "smpl" / "tree"


@pytest.fixture(scope="module")
def analysis():
    files = sorted(p for p in TREE.rglob("*") if p.suffix in (".c", ".h"))
    return analyse(TREE.resolve(), [f.resolve() for f in files], lambda path: [f"-I{TREE.resolve()}"], 1, lambda m: None)


def test_macros_and_wrappers_are_inferred(analysis):
    vocab = analysis.vocab
    assert {"LOCK", "UNLOCK", "mutex_lock", "mutex_unlock", "TBL_LOCK", "TBL_UNLOCK"} <= set(vocab.macros)
    assert set(vocab.wrappers) == {"item_lock", "item_unlock", "stats_lock", "stats_unlock"}
    item_lock = vocab.wrappers["item_lock"]
    assert (item_lock.kind, item_lock.params, normalize(item_lock.expr), item_lock.file) == (
        "lock", ("hv",), "&item_locks[hv%16]", "shapes.c")
    assert vocab.wrappers["stats_lock"].params == ()


@pytest.mark.parametrize(
    "statement, kind, key, via",
    [
        ("LOCK(cache_lock);", "lock", "&cache_lock", "LOCK"),
        ("UNLOCK(cache_lock);", "unlock", "&cache_lock", "UNLOCK"),
        ("TBL_LOCK(tbl, i);", "lock", "&tbl->locks[i]", "TBL_LOCK"),
        ("TBL_UNLOCK(tbl, i);", "unlock", "&tbl->locks[i]", "TBL_UNLOCK"),
        ("mutex_lock(&item_locks[3]);", "lock", "&item_locks[3]", "mutex_lock"),
        ("{pthread_mutex_lock(&(tbl->locks[i]));}", "lock", "&tbl->locks[i]", ""),
        ("if (pthread_mutex_lock(&cache_lock) != 0) abort();", "lock", "&cache_lock", ""),
        ("(void)pthread_mutex_unlock(&cache_lock);", "unlock", "&cache_lock", ""),
        ("item_lock(hv);", "lock", "&item_locks[hv % 16]", "item_lock"),
        ("stats_unlock();", "unlock", "&stats.mutex", "stats_unlock"),
    ],
)
def test_statements_are_read_through_the_vocabulary(analysis, statement, kind, key, via):
    op = classify(statement, analysis.vocab)
    assert op is not None, statement
    assert (op.kind, op.key.replace(" ", ""), op.via) == (kind, key.replace(" ", ""), via)


def test_a_macro_that_does_more_than_lock_is_not_a_lock_statement(analysis):
    assert classify("LOCK_AND_COUNT(&shared_lock, counter);", analysis.vocab) is None


def test_regions_through_macros_and_wrappers(analysis):
    shapes = next(p for p in analysis.parsed.values() if p.path.name == "shapes.c")
    found = {(r.line, r.lock.via) for fr in regions_of(shapes, analysis.vocab) for r in fr.regions}
    assert {(43, "LOCK"), (54, "item_lock"), (61, "stats_lock"), (37, "")} <= found


def test_substitution_and_argument_splitting():
    assert substitute("&(m)", ("m",), ["cache_lock"]) == "&((cache_lock))"
    assert substitute("pthread_mutex_lock(&name##_lock)", ("name",), ["stats"]) == "pthread_mutex_lock(&stats_lock)"
    assert substitute("a ## b", ("a",), ["x"]) == "xb"  # pasted arguments are not parenthesised
    assert substitute("f(#x)", ("x",), ['a "b"']) == 'f("a \\"b\\"")'
    assert substitute("g(x, __VA_ARGS__)", ("x", "..."), ["1", "2", "3"]) == "g((1), 2, 3)"
    assert substitute("x ##", ("x",), ["a"]) is None
    assert split_args("&t->locks[i, j], f(a, b), \"x, y\"") == ["&t->locks[i, j]", "f(a, b)", "\"x, y\""]
    assert split_args("") == []
    assert call_arguments("g(a, /* , */ b) + 1", 1) == (["a", "/* , */ b"], 15)
    assert call_arguments("g(a, b", 1) is None
