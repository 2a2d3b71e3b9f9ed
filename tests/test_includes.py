"""The one include graph (rclify/ctext/includes.py): by path, as the compiler looks (the compile
check's), or by base name (the analysis's, the lock table's, the check's includers of a header),
with one closure; the cases only base names reach, through the analysis too; and each query the
steps ask against what the code it replaced gave."""

from pathlib import Path, PurePath

from rclify.ctext.preprocessor import includes_named, quoted_includes
from rclify.transform.analyse import analyse, regions_of
from rclify.transform.header_sections import includes_locking_header
from rclify.ctext.includes import IncludeGraph
from rclify.ctext.source_tree import SourceTree
from rclify.lock_identity.struct_instances import struct_locks


def _tree(root: Path, files: dict[str, str]) -> SourceTree:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return SourceTree(root, [root / rel for rel in sorted(files)])


def test_a_header_found_through_an_include_directory(tmp_path):
    """libuv's src/unix/*.c `#include "uv-common.h"`, which is src/uv-common.h (the build's -Isrc)."""
    tree = _tree(tmp_path, {"src/unix/core.c": '#include "uv-common.h"\n', "src/uv-common.h": ""})
    assert IncludeGraph.by_base_name(tree).closure("src/unix/core.c") == {"src/uv-common.h"}
    assert IncludeGraph.by_path(tmp_path, tree.files, [], tree.text).closure("src/unix/core.c") == set()
    assert IncludeGraph.by_path(tmp_path, tree.files, ["-Isrc"], tree.text).closure("src/unix/core.c") == \
        {"src/uv-common.h"}


def test_a_header_named_by_a_path_from_another_directory(tmp_path):
    """nng's `#include "nng/nng.h"` is include/nng/nng.h (-Iinclude); libusb's examples'
    "libusb.h" is libusb/libusb.h."""
    tree = _tree(tmp_path, {"src/core/aio.c": '#include "nng/nng.h"\n', "include/nng/nng.h": "",
                            "examples/dpfp.c": '#include "libusb.h"\n', "libusb/libusb.h": ""})
    graph = IncludeGraph.by_base_name(tree)
    assert graph.closure("src/core/aio.c") == {"include/nng/nng.h"}
    assert graph.closure("examples/dpfp.c") == {"libusb/libusb.h"}


def test_every_header_of_the_name_is_reached(tmp_path):
    """Two headers of one name: by base name both (a superset), by path the one beside it."""
    tree = _tree(tmp_path, {"src/unix/fs.c": '#include "internal.h"\n', "src/unix/internal.h": "",
                            "src/win/internal.h": ""})
    assert IncludeGraph.by_base_name(tree).closure("src/unix/fs.c") == {"src/unix/internal.h", "src/win/internal.h"}
    assert IncludeGraph.by_path(tmp_path, tree.files, [], tree.text).closure("src/unix/fs.c") == \
        {"src/unix/internal.h"}


def test_chains_of_headers_are_followed_but_not_angle_brackets_or_c_files(tmp_path):
    """libmicrohttpd's mhd_locks.h, reached through internal.h; by base name only `"x"` names a
    header, and a C file included is no header (by path both count)."""
    tree = _tree(tmp_path, {"a.c": '#include "internal.h"\n#include <sys.h>\n#include "part.c"\n',
                            "internal.h": '#include "mhd_locks.h"\n', "mhd_locks.h": "", "sys.h": "",
                            "part.c": '#include "deep.h"\n', "deep.h": ""})
    assert IncludeGraph.by_base_name(tree).closure("a.c") == {"internal.h", "mhd_locks.h"}
    assert IncludeGraph.by_path(tmp_path, tree.files, [], tree.text).closure("a.c") == \
        {"internal.h", "mhd_locks.h", "sys.h", "part.c", "deep.h"}


LOCKS_H = """#include <pthread.h>
#define LOCK(m) pthread_mutex_lock(m)
#define UNLOCK(m) pthread_mutex_unlock(m)
"""
WORK_C = """#include "internal.h"
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int n;
void work(void) { LOCK(&mu); n++; UNLOCK(&mu); }
"""


def test_the_analysis_parses_a_file_that_locks_through_a_header_only_its_flags_find(tmp_path):
    """src/unix/work.c names no pthread function: it locks through LOCK, which src/locks.h defines,
    reached through its own internal.h as `"locks.h"` (found by the build's -Isrc).  It is parsed
    first, as a file reaching a header where lock macros are, so LOCK is learnt and its region found."""
    root = tmp_path.resolve()
    tree = _tree(root, {"src/locks.h": LOCKS_H, "src/unix/internal.h": '#include "locks.h"\n',
                        "src/unix/work.c": WORK_C})
    analysis = analyse(root, tree.files, lambda path: [f"-I{root / 'src'}"], 1, lambda m: None, source=tree)
    work = root / "src/unix/work.c"
    assert work in analysis.parsed and {"LOCK", "UNLOCK"} <= set(analysis.vocab.macros)
    assert [len(f.regions) for f in regions_of(analysis.parsed[work], analysis.vocab)] == [1]
    analysis.cleanup()


# The queries the analysis, the lock table and the compile check ask (IncludeGraph.includes,
# direct_includers, closure), each against what the code they replaced computed from the texts.
SMALL_TREE = {
    "src/a.c": '#include "util/lock.h"\n#include <sys.h>\n#include "common.h"\n',
    "src/b.c": '#include <util/lock.h>\n#include "part.c"\n',  # `<x>` and a C file: no header by base name
    "src/c.c": '#include "lock.h"\n',
    "src/part.c": '#include "common.h"\n',
    "src/util/lock.h": "#include <pthread.h>\nstatic inline void take(pthread_mutex_t *m) { pthread_mutex_lock(m); }\n",
    "lib/lock.h": "#define TAKE(m) pthread_mutex_lock(m)\n",  # the same base name; locks in a #define only
    "sys.h": "",
    "include/common.h": '#include "sub/inner.h"\n',  # a chain: common.h -> inner.h -> deep.h
    "include/sub/inner.h": '#include "deep.h"\n#include "common.h"\n',
    "include/sub/deep.h": "struct s { pthread_mutex_t m; };\n",
}


def _old_includes(texts: dict[str, str], rel: str) -> set[str]:
    """The headers of the tree named like one of rel's `"x"` includes (includes_named's reading)."""
    names = {PurePath(n).name for n in quoted_includes(texts[rel])}
    return {h for h in texts if not h.endswith(".c") and PurePath(h).name in names} - {rel}


def _old_visible(texts: dict[str, str], rel: str) -> set[str]:
    """struct_instances' chain of quoted includes by base name, before it asked the graph."""
    seen, todo = {rel}, [rel]
    while todo:
        for h in _old_includes(texts, todo.pop()):
            if h not in seen:
                seen.add(h)
                todo.append(h)
    return seen - {rel}


def test_a_files_own_includes_are_its_quoted_includes_by_base_name(tmp_path):
    tree = _tree(tmp_path, SMALL_TREE)
    graph = IncludeGraph.by_base_name(tree)
    for rel in SMALL_TREE:
        assert graph.includes(rel) == _old_includes(SMALL_TREE, rel), rel
    assert graph.includes("src/a.c") == {"src/util/lock.h", "lib/lock.h", "include/common.h"}
    assert graph.includes("src/b.c") == set()


def test_the_c_files_that_include_a_header_directly_as_the_compile_check_read_them(tmp_path):
    """Staging._includers: the C files naming the header's base name in a `"x"` include."""
    tree = _tree(tmp_path, SMALL_TREE)
    graph = IncludeGraph.by_base_name(tree)
    c_files = [rel for rel in sorted(SMALL_TREE) if rel.endswith(".c")]
    for header in (h for h in SMALL_TREE if not h.endswith(".c")):
        old = [rel for rel in c_files if includes_named(SMALL_TREE[rel], {PurePath(header).name})]
        assert [rel for rel in c_files if rel in graph.direct_includers(header)] == old, header
    assert graph.direct_includers("lib/lock.h") == {"src/a.c", "src/c.c"}
    assert graph.direct_includers("include/common.h") == {"src/a.c", "src/part.c", "include/sub/inner.h"}
    assert graph.includers("include/sub/deep.h") == {"src/a.c", "src/part.c", "include/common.h",
                                                     "include/sub/inner.h"}


def test_the_headers_a_file_reaches_through_a_chain_as_struct_instances_read_them(tmp_path):
    tree = _tree(tmp_path, SMALL_TREE)
    graph = IncludeGraph.by_base_name(tree)
    for rel in SMALL_TREE:
        assert graph.closure(rel) == _old_visible(SMALL_TREE, rel), rel
    assert graph.closure("src/a.c") == {"src/util/lock.h", "lib/lock.h", "include/common.h",
                                        "include/sub/inner.h", "include/sub/deep.h"}
    assert graph.closure("include/common.h") == {"include/sub/inner.h", "include/sub/deep.h"}  # not itself
    assert IncludeGraph.by_base_name_of(tree.texts()).direct == graph.direct


def test_a_c_file_including_a_header_whose_functions_lock(tmp_path):
    """includes_locking_header: src/util/lock.h locks in a function; a `"lock.h"` of any directory
    names it (by base name, as before); lib/lock.h alone (a #define) would not count."""
    tree = _tree(tmp_path, SMALL_TREE)
    test = includes_locking_header(tree, IncludeGraph.by_base_name(tree), {"pthread_mutex_lock"}, tree.files)
    locking = {"lock.h"}  # the base names the replaced code kept
    for rel in (r for r in SMALL_TREE if r.endswith(".c")):
        assert test(tmp_path / rel) == includes_named(SMALL_TREE[rel], locking), rel
    assert [r for r in sorted(SMALL_TREE) if r.endswith(".c") and test(tmp_path / r)] == ["src/a.c", "src/c.c"]
    without = {rel: text for rel, text in SMALL_TREE.items() if rel != "src/util/lock.h"}
    tree = _tree(tmp_path / "without", without)
    test = includes_locking_header(tree, IncludeGraph.by_base_name(tree), {"pthread_mutex_lock"}, tree.files)
    assert not any(test(f) for f in tree.files)


def test_struct_types_through_the_graph_given_or_built(tmp_path):
    """struct_locks sees deep.h's struct s through common.h and inner.h, the same whether the
    pipeline's graph is handed to it or it builds one from the texts."""
    texts = {**SMALL_TREE, "src/a.c": SMALL_TREE["src/a.c"] + "static struct s one;\n"}
    tree = _tree(tmp_path, texts)
    given = struct_locks(texts, IncludeGraph.by_base_name(tree))
    assert [(s.file, s.variable, s.field) for s in given] == [("src/a.c", "one", "m")]
    assert struct_locks(texts) == given
