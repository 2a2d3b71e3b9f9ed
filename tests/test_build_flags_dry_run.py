"""Flags without a full build (issue 37, build_flags/dry_run.py): the compile database read from
make's dry run (`make -n`), sub-makes included; the whole build under bear only when a file
that locks includes a header only the build makes."""

import shutil
from pathlib import Path

import pytest

from rclify.transform import build_flags
from rclify.transform.build_flags import dry_run

# what `make -n -w` prints for a redis-like recursive build (printf before the compiler, a cd,
# a libtool compile, ccache, a continued line, a link that is no compile)
OUTPUT = """\
make: Entering directory '/t'
cd src && make all
make[1]: Entering directory '/t/src'
printf '    %b %b\\n' CC server.o 1>&2;cc -std=c11 -I../deps/hiredis -DUSE_X -c server.c
cc -std=c11 -o redis-server server.o -lm
/bin/bash ../libtool --tag=CC --mode=compile gcc -DHAVE_CONFIG_H -I. -c -o lock.lo lock.c
ccache gcc -O2 \\
  -DLONG -c long.c -o long.o
make[2]: Entering directory '/t/deps/lua/src'
gcc -O2 -c lapi.c -o lapi.o
make[2]: Leaving directory '/t/deps/lua/src'
(cd ../deps/hiredis && cc -c 'net.c')
make[1]: Leaving directory '/t/src'
make: Leaving directory '/t'
"""


def test_the_compiles_of_a_dry_runs_output_with_their_directories():
    entries = dry_run.compile_commands(OUTPUT, Path("/t"))
    got = [(e["directory"], e["file"], e["arguments"][0]) for e in entries]
    assert got == [("/t/src", "server.c", "cc"), ("/t/src", "lock.c", "gcc"), ("/t/src", "long.c", "gcc"),
                   ("/t/deps/lua/src", "lapi.c", "gcc"), ("/t/deps/hiredis", "net.c", "cc")], got
    assert entries[0]["arguments"] == ["cc", "-std=c11", "-I../deps/hiredis", "-DUSE_X", "-c", "server.c"]
    assert entries[1]["arguments"] == ["gcc", "-DHAVE_CONFIG_H", "-I.", "-c", "-o", "lock.lo", "lock.c"]
    assert entries[2]["arguments"] == ["gcc", "-O2", "-DLONG", "-c", "long.c", "-o", "long.o"]  # joined, no ccache


needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="needs make (bash scripts/setup.sh)")

LOCKS_C = ('#include <pthread.h>\n#include "shared.h"\nstatic pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n'
           'void bump(void) { pthread_mutex_lock(&m); SHARED++; pthread_mutex_unlock(&m); }\n')


def _recursive_tree(root: Path, generated: bool = False, slow: bool = False) -> Path:
    files = {
        "Makefile": "all:\n\tcd src && $(MAKE) all\n",
        "include/shared.h": "extern int shared_count;\n#define SHARED shared_count\n",
        "src/Makefile": ("CFLAGS = -O1 -DFROM_SUB -I../include\nall: locks.o\n"
                         + ("gen.h:\n\techo '#define GEN 1' > gen.h\nlocks.o: gen.h\n" if generated else "")
                         # a long step after the header is made (redis: jemalloc's compiles after its configure)
                         + ("slow: gen.h\n\tsleep 120\nlocks.o: slow\n" if slow else "")
                         + "locks.o: locks.c\n\t$(CC) $(CFLAGS) -c locks.c -o locks.o\n"),
        "src/locks.c": ('#include "gen.h"\n' if generated else "") + LOCKS_C,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@needs_make
def test_a_recursive_make_tree_gets_its_flags_from_the_dry_run_and_nothing_is_built(tmp_path):
    tree = _recursive_tree(tmp_path / "tree")
    messages = []
    flags = build_flags.find(tree, None, [], messages.append)
    try:
        assert flags.source.startswith("make -n (1 compiles of a dry run: nothing built)"), flags.source
        words = flags.for_file(tree / "src" / "locks.c")
        assert "-DFROM_SUB" in words, words
        assert [Path(w[2:]).resolve() for w in words if w.startswith("-I")] == [(tree / "include").resolve()], words
        assert not any("under bear" in m for m in messages), messages
        assert flags.scratch and not [o for d in [tree, *flags.scratch] for o in Path(d).rglob("*.o")]
    finally:
        flags.cleanup()


@needs_make
def test_a_header_only_the_build_makes_sends_it_to_the_whole_build(tmp_path):
    if shutil.which("bear") is None:
        pytest.fail("bear is not installed (scripts/setup.sh installs it)")
    tree = _recursive_tree(tmp_path / "tree", generated=True)
    messages = []
    flags = build_flags.find(tree, None, [], messages.append)
    try:
        assert any("the files that lock include headers only the build makes (gen.h): the build runs until they "
                   "exist" in m for m in messages), messages
        assert flags.source.startswith("make under bear"), flags.source  # a build this short ends first
        assert "-DFROM_SUB" in flags.for_file(tree / "src" / "locks.c")
    finally:
        flags.cleanup()


def test_only_headers_the_preprocessor_takes_and_cannot_find_need_the_build(tmp_path):
    """#if branches as the file's own flags take them (redis's zmalloc.h names tcmalloc's header
    too); a file that does not lock is not asked."""
    (tmp_path / "present.h").write_text("#define PRESENT 1\n")
    (tmp_path / "locks.c").write_text('#include "present.h"\n#ifdef USE_TC\n#include <tc/tc.h>\n#endif\n'
                                      '#include "gen.h"\n' + LOCKS_C.replace('#include "shared.h"\n', ""))
    (tmp_path / "plain.c").write_text('#include "other_gen.h"\nint plain;\n')

    def entry(name: str, *flags: str) -> dict:
        return {"directory": str(tmp_path), "file": name, "arguments": ["cc", *flags, "-c", name]}

    assert dry_run.needs_build([entry("locks.c"), entry("plain.c")]) == ["gen.h"]
    assert dry_run.needs_build([entry("locks.c", "-DUSE_TC")]) == ["gen.h", "tc/tc.h"]


@needs_make
def test_the_build_stops_once_the_headers_it_makes_exist_and_the_dry_run_serves(tmp_path):
    if shutil.which("bear") is None:
        pytest.fail("bear is not installed (scripts/setup.sh installs it)")
    tree = _recursive_tree(tmp_path / "tree", generated=True, slow=True)
    flags = build_flags.find(tree, None, [], lambda message: None)
    try:
        assert flags.source.startswith("make -n (1 compiles of a dry run), after "), flags.source
        assert "of the build made the headers it needs (gen.h)" in flags.source
        assert "-DFROM_SUB" in flags.for_file(tree / "src" / "locks.c")
        copy = Path(flags.scratch[0])
        assert list(copy.rglob("gen.h")) and not list(copy.rglob("locks.o"))  # stopped before the compile
    finally:
        flags.cleanup()


def test_an_include_directory_of_the_tree_is_searched_in_the_scratch_copy_too(tmp_path):
    """redis: `-I../deps/jemalloc/include` names a directory of the tree, and jemalloc's configure
    writes jemalloc/jemalloc.h under it in the scratch copy only: the copy's is searched last."""
    from rclify.transform.build_flags.build_scripts import _mapped
    root, copy = tmp_path / "tree", tmp_path / "scratch" / "tree"
    for base in (root, copy):
        (base / "deps/je/include/je").mkdir(parents=True)
        (base / "src").mkdir()
        (base / "src/a.c").write_text("int a;\n")
    (copy / "deps/je/include/je/je.h").write_text("#define JE 1\n")
    entry = {"directory": str(copy / "src"), "file": "a.c",
             "arguments": ["cc", "-I../deps/je/include", "-I", "../deps/je/include", "-c", "a.c"]}
    words = _mapped(entry, copy, root)["arguments"]
    assert words[1] == f"-I{root}/src/../deps/je/include" and words[3] == f"{root}/src/../deps/je/include"
    assert words[-2:] == ["-idirafter", f"{copy}/src/../deps/je/include"], words
