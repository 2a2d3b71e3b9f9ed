"""Discovery (semantic_patches/discover/, rclify/transform/discover.py) and lock ids
(rclify/lock_identity/lock_table.py).

The fixture tree tests/fixtures/smpl/tree/ holds one small program with every lock shape we
support: direct calls in braces, in an `if (... != 0)`, cast to void; lock macros (plain,
do-while, memcached's mutex_lock(x), bare braces); wrapper functions (item_lock/item_unlock via a
macro, a trylock wrapper returning its result, argument-less stats_lock); cond variables; static
and dynamic initialisation; a header; a subdirectory; and a file that does not parse.
Discovery reports the pthread calls as written (inside #define bodies too); what the macros and
wrappers mean is the vocabulary's business (tests/test_vocabulary.py).
"""

import re
import shutil
from pathlib import Path

import pytest

from rclify.lock_identity.discovered_sites import Discovery, Site
from rclify.transform.discover import discover
from rclify.lock_identity.lock_table import build_lock_table, normalize
from rclify.ctext.preprocessor import define_around
from rclify.ctext.spatch import MACRO_FILE
from rclify.ctext.tree_macros import declaration_macros, write_macro_file
from rclify.paths import CORPUS_DIR

TREE = Path(__file__).parent / "fixtures" / "smpl" / "tree"

pytestmark = pytest.mark.skipif(shutil.which("spatch") is None, reason="spatch (coccinelle) not installed")


def c_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".c", ".h"))


@pytest.fixture(scope="module")
def found():
    return discover(TREE, c_files(TREE), jobs=2)


def sites_at(found, file, line):
    return [s for s in found.sites if s.file == file and s.line == line]


def one(found, file, line, kind=None) -> Site:
    hits = [s for s in sites_at(found, file, line) if kind is None or s.kind == kind]
    assert len(hits) == 1, f"{file}:{line}: {hits}"
    return hits[0]


@pytest.mark.parametrize(
    "line, kind, function, expr",
    [
        (37, "lock", "shapes", "&(tbl->locks[i])"),  # {pthread_mutex_lock(&(tbl->locks[i]));}
        (39, "unlock", "shapes", "&(tbl->locks[i])"),
        (40, "lock", "shapes", "&cache_lock"),  # if (pthread_mutex_lock(&m) != 0) abort();
        (42, "unlock", "shapes", "&cache_lock"),  # (void)pthread_mutex_unlock(&m);
        (29, "trylock", "item_trylock", "&item_locks[hv % 16]"),
        (32, "lock", "stats_lock", "&stats.mutex"),
        (71, "lock", "waits", "&local_lock"),
        (72, "cond_timedwait", "waits", "&tbl->ready"),
        (76, "cond_wait", "waits", "&tbl->ready"),
        (77, "cond_broadcast", "waits", "&tbl->ready"),
        (78, "cond_signal", "waits", "&cache_cond"),
        (89, "mutex_init", "setup", "&tbl->locks[i]"),
        (91, "cond_init", "setup", "&tbl->ready"),
        (104, "mutex_destroy", "teardown", "&tbl->locks[i]"),
        (105, "cond_destroy", "teardown", "&tbl->ready"),
    ],
)
def test_every_shape_is_found(found, line, kind, function, expr):
    site = one(found, "shapes.c", line, kind)
    assert (site.function, site.expr) == (function, expr)


def test_calls_through_macros_are_not_discovery_sites(found):
    # LOCK(cache_lock) at line 43 and item_lock(hv) at line 54: the vocabulary reads those
    assert not sites_at(found, "shapes.c", 43) and not sites_at(found, "shapes.c", 54)


def test_cond_wait_keeps_the_mutex_argument(found):
    assert one(found, "shapes.c", 76).args == ("&tbl->ready", "&tbl->locks[0]")


def test_definitions_and_fields(found):
    defs = {(s.file, s.expr): s for s in found.of_kind("static_mutex", "mutex_var", "static_cond")}
    assert defs["shapes.c", "cache_lock"].kind == "static_mutex"
    assert defs["shapes.c", "rec_lock"].kind == "static_mutex"
    assert defs["shapes.c", "pair"].array and defs["shapes.c", "pair"].kind == "static_mutex"
    assert defs["shapes.c", "item_locks"].kind == "mutex_var" and defs["shapes.c", "item_locks"].array
    assert defs["shapes.c", "local_lock"].function == "waits" and defs["shapes.c", "local_lock"].scope == "function"
    assert defs["shapes.c", "cache_cond"].kind == "static_cond"
    assert defs["locks.h", "locks"].scope == "struct table"
    assert defs["locks.h", "mutex"].scope == "stats_t"
    assert ("locks.h", "shared_lock") not in defs  # extern declaration, not a definition
    assert ("shapes.c", "heap_locks") not in defs  # a pointer


def test_other_api_is_reported(found):
    other = {(s.file, s.line): s.api for s in found.of_kind("other_mutex_api")}
    assert other[("sub/timed.c", 10)] == "pthread_mutex_timedlock"
    assert other[("sub/timed.c", 15)] == "pthread_mutex_clocklock"
    assert other[("sub/timed.c", 17)] == "pthread_cond_clockwait"
    assert other[("shapes.c", 86)] == "pthread_mutexattr_init"


def test_macro_bodies_are_sites_at_file_scope(found):
    # the pthread call inside `#define LOCK(m) ...` is reported where it is written
    body = one(found, "locks.h", 6)
    assert (body.kind, body.function, body.expr) == ("lock", "", "&(m)")


def test_parse_failure_is_reported_with_the_file(found):
    assert "broken.c" in found.failures
    assert "broken.c:14" in found.failures["broken.c"]
    assert set(found.failures) == {"broken.c"}  # a #define that does not parse is no failure


# ------------------------------------------------------------------------------------- lock ids


def test_lock_ids_are_stable_and_unique(found):
    table = build_lock_table(found)
    ids = [s.lock_id for s in table.sites]
    assert len(ids) == len(set(ids))
    assert set(ids) == {
        "broken.c:broken_lock", "shapes.c:cache_lock", "shapes.c:heap_locks[]", "shapes.c:item_locks[]",
        "shapes.c:pair[]", "shapes.c:rec_lock", "shapes.c:shared_lock", "shapes.c:stats.mutex",
        "shapes.c:tbl->locks[]", "shapes.c:waits:local_lock", "sub/timed.c:timed_lock",
    }
    # the definition of item_locks and its pthread_mutex_init loop are one site
    assert len(table.by_id["shapes.c:item_locks[]"].sites) == 2
    again = build_lock_table(discover(TREE, c_files(TREE)))
    assert [s.lock_id for s in again.sites] == ids
    entries = table.entries()
    assert entries[0].macro.startswith("RCLIFY_LOCK_") and "broken_lock" in entries[0].description


def test_same_expression_twice_is_disambiguated():
    sites = [Site("mutex_init", "a.c", 10, 4, "f", "&c->lock"), Site("mutex_init", "a.c", 20, 4, "g", "&c->lock")]
    ids = [s.lock_id for s in build_lock_table(Discovery(sites, {})).sites]
    assert ids == ["a.c:c->lock", "a.c:c->lock#2"]


def test_match_lock(found):
    table = build_lock_table(found)
    assert table.match_lock("&cache_lock", "shapes.c", "shapes") == "shapes.c:cache_lock"
    assert table.match_lock("&(cache_lock)", "shapes.c", "shapes") == "shapes.c:cache_lock"
    assert table.match_lock("&item_locks[hv % 16]", "shapes.c", "wrappers") == "shapes.c:item_locks[]"
    assert table.match_lock("&local_lock", "shapes.c", "waits") == "shapes.c:waits:local_lock"
    assert table.match_lock("&shared_lock", "sub/timed.c", "timed") == "shapes.c:shared_lock"  # extern
    assert table.match_lock("&(tbl->locks[i])", "shapes.c", "shapes") == "shapes.c:tbl->locks[]"
    assert table.match_lock("&t->locks[0]", "other.c", "x") == "shapes.c:tbl->locks[]"  # same member name
    assert table.match_lock("&nothing_like_it", "shapes.c", "shapes") is None


def test_normalize():
    assert normalize("&me->notify_lock") == "me->notify_lock"
    assert normalize("&item_locks[hv & hashmask(item_lock_hashpower)]") == "item_locks[]"
    assert normalize("&(c->thread->stats.mutex)") == "c->thread->stats.mutex"
    assert normalize("& threads[i] . stats . mutex") == "threads[].stats.mutex"
    # a lock wrapper's argument substituted (pigz's possess(pool->have) locking &(bolt->mutex))
    assert normalize("&(((pool->have))->mutex)") == "pool->have->mutex"
    assert normalize("&(((write_first))->mutex)") == "write_first->mutex"


# --------------------------------------------------------------------------------- the corpus


def corpus_programs():
    if not CORPUS_DIR.is_dir():
        return []
    return sorted(p for p in CORPUS_DIR.iterdir() if p.is_dir() and any(p.glob("*.c")))


# Programs spatch 1.1 cannot parse a file of, said as a failure (the transform reads their regions
# with libclang all the same, and the report lists the file under parse_failures): what it stops at.
SPATCH_CANNOT_PARSE = {
    "locals_cleanup_attribute": "__attribute__((cleanup(release))) line",  # between `*` and the name
}


@pytest.mark.skipif(not corpus_programs(), reason="no corpus yet")
def test_discovery_over_the_corpus():
    """Every corpus program: its lock and unlock calls are found inside functions, or the file
    whose calls spatch could not see is a failure (refuse_computed_goto: spatch skips functions
    with computed goto), never silently dropped."""
    for program in corpus_programs():
        found = discover(program, c_files(program), jobs=2)
        kinds = {s.kind for s in found.sites}
        if found.failures:
            known = SPATCH_CANNOT_PARSE.get(program.name)
            assert program.name.startswith("refuse_") or (
                known and all(known in why for why in found.failures.values())), (program.name, found.failures)
            continue
        if not kinds & {"lock", "trylock"}:
            # the locks are taken only through object-like aliases, which spatch does not expand
            # (the vocabulary follows them with libclang): macro_alias_init
            texts = "".join(f.read_text() for f in program.iterdir() if f.suffix in (".c", ".h"))
            assert re.search(r"#define\s+\w+\s+pthread_mutex_lock\s*$", texts, re.M), program.name
            continue
        assert "unlock" in kinds, program.name
        outside = [s for s in found.sites if s.kind in ("lock", "unlock", "trylock") and not s.function]
        # outside a function only in a #define body (a lock macro), where it is written
        assert all(define_around((program / s.file).read_text(), s.line) for s in outside), program.name


def test_computed_goto_is_a_failure_not_a_silent_drop(tmp_path):
    (tmp_path / "vm.c").write_text(
        "#include <pthread.h>\nstatic pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n"
        "void run(int i) {\n  static void *t[] = { &&a, &&b };\n  pthread_mutex_lock(&m);\n"
        "  goto *t[i];\na:\n  i++;\nb:\n  pthread_mutex_unlock(&m);\n}\n")
    found = discover(tmp_path, [tmp_path / "vm.c"])
    assert found.failures["vm.c"].startswith("vm.c:5: pthread_mutex_lock call not seen by spatch")


def test_a_define_spatch_cannot_parse_is_not_a_failure(tmp_path):
    """A scoped lock macro's body is a statement header spatch cannot parse as a #define; its
    uses parse (as iterators) and its calls are found, so the file is no failure."""
    (tmp_path / "scoped.c").write_text(
        "#include <pthread.h>\n"
        "#define WITH_LOCK(m) for (int i_ = (pthread_mutex_lock(&(m)), 0); !i_; pthread_mutex_unlock(&(m)), i_ = 1)\n"
        "static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\nstatic pthread_cond_t c;\nstatic int x;\n"
        "void f(void) {\n  WITH_LOCK(m) {\n    x++;\n    pthread_cond_signal(&c);\n  }\n}\n")
    found = discover(tmp_path, [tmp_path / "scoped.c"])
    assert found.failures == {}
    assert {(s.kind, s.line) for s in found.sites} >= {("lock", 2), ("unlock", 2), ("cond_signal", 9)}


def test_a_storage_macro_is_read_as_its_storage_class(tmp_path):
    """pigz's yarn.c: `#define local static`, then `local lock threads_lock = {
    PTHREAD_MUTEX_INITIALIZER, ... }` (a struct holding the mutex): it gets its id, as with plain
    `static`; and `local pthread_mutex_t m;` in two files are two locks, not one tentative global
    (`pthread_mutex_t m;` in two files is one object: lock_table.py)."""
    (tmp_path / "yarn.h").write_text("#define local static\n")
    (tmp_path / "yarn.c").write_text(
        '#include <pthread.h>\n#include "yarn.h"\n'
        "struct lock_s { pthread_mutex_t mutex; pthread_cond_t cond; long value; };\n"
        "typedef struct lock_s lock;\n"
        "local lock threads_lock = {\n    PTHREAD_MUTEX_INITIALIZER,\n    PTHREAD_COND_INITIALIZER,\n    0\n};\n"
        "long bump(void) {\n    pthread_mutex_lock(&threads_lock.mutex);\n"
        "    long v = ++threads_lock.value;\n    pthread_mutex_unlock(&threads_lock.mutex);\n    return v;\n}\n")
    for name in ("a.c", "b.c"):
        (tmp_path / name).write_text(
            '#include <pthread.h>\n#include "yarn.h"\nlocal pthread_mutex_t m;\n'
            "void f(void) { pthread_mutex_lock(&m); pthread_mutex_unlock(&m); }\n")
    files = [tmp_path / "yarn.c", tmp_path / "a.c", tmp_path / "b.c", tmp_path / "yarn.h"]
    texts = {p.name: p.read_text() for p in files}
    macros = write_macro_file(MACRO_FILE, declaration_macros(texts), tmp_path)  # as run.py: spatch reads `local` as empty
    found = discover(tmp_path, files, macro_file=macros)
    assert found.failures == {}
    assert {(s.file, s.static) for s in found.of_kind("mutex_var") if s.scope == "file"} == {("a.c", True), ("b.c", True)}
    table = build_lock_table(found, texts)
    assert {s.lock_id for s in table.sites} == {"yarn.c:threads_lock.mutex", "a.c:m", "b.c:m"}
    assert table.by_id["yarn.c:threads_lock.mutex"].kind == "static_mutex"
    assert table.by_id["yarn.c:threads_lock.mutex"].static
