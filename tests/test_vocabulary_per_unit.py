"""The lock vocabulary per translation unit (Vocabulary.for_file, ctext/unit_macros.py): a macro the
tree defines in more than one way means, in each unit, what that unit's own preprocessor has in
force where a function starts; another unit's definition, or one in an #if branch this unit does not
compile, changes nothing in it.  And the names two programs of one tree share only by accident
(ctext/includes.py's shared_lock_names): a type's name is no link between files.

The three-file tree of issue 37 (unbound's util/locks.h and compat/arc4_lock.c) is
corpus/macro_helper_redefined_per_unit/, run original against transformed by the corpus tests."""

from pathlib import Path

from rclify.ctext.includes import IncludeGraph, left_unchanged_group, shared_lock_names
from rclify.transform.analyse import analyse, regions_of

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
UNBOUND_LIKE = CORPUS / "macro_helper_redefined_per_unit"


def _analysed(root: Path):
    files = sorted(p.resolve() for p in root.iterdir() if p.suffix in (".c", ".h"))
    return analyse(root.resolve(), files, lambda path: [f"-I{root.resolve()}"], 1, lambda m: None)


def _regions(analysis) -> dict[str, list[tuple[str, int]]]:
    """{file: [(function, line of each region)]} of every analysed file."""
    out: dict[str, list[tuple[str, int]]] = {}
    for path, parsed in sorted(analysis.parsed.items()):
        out[path.name] = [(fr.function.spelling, r.line) for fr in regions_of(parsed, analysis.vocab)
                          for r in fr.regions]
    return out


def test_a_helper_redefined_by_one_file_changes_nothing_in_the_others():
    """Issue 37's repro: with one file's `#define LOCKRET(func) func`, every lock statement of the
    tree used to be `not-a-lock-statement` (LOCKRET had two definitions, so no reading)."""
    analysis = _analysed(UNBOUND_LIKE)
    assert "LOCKRET" in analysis.vocab.ambiguous
    regions = _regions(analysis)
    assert regions["counter.c"] == [("counter_add", 15), ("counter_get", 23)]  # the checked LOCKRET
    assert regions["sequence.c"] == [("sequence_next", 18)]  # its own, unchecked


def test_each_function_reads_the_definitions_in_force_where_it_starts(tmp_path):
    """A unit that defines the helper again half-way (`#undef` then `#define`): the functions
    before read the first definition, those after the second, here one that takes no lock."""
    (tmp_path / "locks.h").write_text(
        "#include <pthread.h>\n"
        "#define TAKE(l) CHECK(pthread_mutex_lock(l))\n"
        "#define DROP(l) CHECK(pthread_mutex_unlock(l))\n")
    (tmp_path / "a.c").write_text(
        "#include <stdlib.h>\n"
        "#define CHECK(f) do { if ((f) != 0) abort(); } while (0)\n"
        '#include "locks.h"\n'
        "static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n"
        "static int n;\n"
        "void before(void)\n{\n    TAKE(&m);\n    n++;\n    DROP(&m);\n}\n"
        "#undef CHECK\n"
        "#define CHECK(f) ((void)0)\n"  # no lock call left: not a lock statement from here on
        "void after(void)\n{\n    TAKE(&m);\n    n++;\n    DROP(&m);\n}\n")
    (tmp_path / "b.c").write_text(
        "#define CHECK(f) (f)\n"
        '#include "locks.h"\n'
        "static pthread_mutex_t k = PTHREAD_MUTEX_INITIALIZER;\n"
        "static int j;\n"
        "void other(void)\n{\n    TAKE(&k);\n    j++;\n    DROP(&k);\n}\n")
    regions = _regions(_analysed(tmp_path))
    assert regions["a.c"] == [("before", 8)]
    assert regions["b.c"] == [("other", 7)]


def test_a_lock_macro_of_an_if_branch_another_unit_compiles_changes_nothing_here(tmp_path):
    """One header, two units compiling different branches: each unit reads the one it compiles
    (a lock in one, a function of the program in the other, whose lock is then not a macro's)."""
    (tmp_path / "locks.h").write_text(
        "#include <pthread.h>\n"
        "#ifdef WITH_WRAPPER\n"
        "void take_slowly(pthread_mutex_t *l);\n"
        "#define TAKE(l) take_slowly(l)\n"
        "#else\n"
        "#define TAKE(l) pthread_mutex_lock(l)\n"
        "#endif\n"
        "#define DROP(l) pthread_mutex_unlock(l)\n")
    (tmp_path / "plain.c").write_text(
        '#include "locks.h"\n'
        "static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n"
        "static int n;\n"
        "void plain(void)\n{\n    TAKE(&m);\n    n++;\n    DROP(&m);\n}\n")
    (tmp_path / "slow.c").write_text(
        "#define WITH_WRAPPER 1\n"
        '#include "locks.h"\n'
        "static pthread_mutex_t k = PTHREAD_MUTEX_INITIALIZER;\n"
        "static int j;\n"
        "void slow(void)\n{\n    TAKE(&k);\n    j++;\n    DROP(&k);\n}\n")
    analysis = _analysed(tmp_path)
    assert "TAKE" in analysis.vocab.ambiguous
    regions = _regions(analysis)
    assert regions["plain.c"] == [("plain", 6)]
    assert regions["slow.c"] == []  # take_slowly is no lock the tree shows: DROP's unlock is alone


def test_a_type_two_programs_both_declare_links_no_files():
    """Two programs of one tree (a library's example and its test) each declare a `queue_t`
    holding a mutex: the type's name is no object or function the linker shares, so one program's
    file left unchanged leaves the other's alone.  A function taking that type still links
    files (declared in each without a common header)."""
    example = ("typedef struct { pthread_mutex_t lock; int n; } queue_t;\n"
               "static queue_t q;\n"
               "queue_t *spare;\n"
               "void queue_push(queue_t *q, int v);\n")
    test = ("typedef struct queue { pthread_mutex_t lock; long items[8]; } queue_t;\n"
            "static queue_t *make(void);\n")
    assert shared_lock_names(example) == {"queue_push", "spare"}
    assert shared_lock_names(test) == set()
    texts = {"examples/queue.c": example, "tests/queue.c": test,
             "lib/push.c": "typedef struct { pthread_mutex_t lock; int n; } queue_t;\n"
                           "void queue_push(queue_t *q, int v) { }\n"}
    graph = IncludeGraph({rel: set() for rel in texts})  # no file includes another
    group = left_unchanged_group({"examples/queue.c": "broken"}, set(texts), graph, texts)
    assert set(group) == {"examples/queue.c", "lib/push.c"}

