"""The one include graph (rclify/transform/includes.py): by path, as the compiler looks (the compile
check's), or by base name (the analysis's), with one closure; and the cases only base names reach,
through the analysis too."""

from pathlib import Path

from rclify.transform.analyse import analyse, regions_of
from rclify.transform.includes import IncludeGraph
from rclify.transform.source_tree import SourceTree


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
