"""Know the build (rclify/transform/build_flags/): every file is analysed with the flags its
build uses: a compile database, CMake's export, ./configure in a scratch copy, or a guess."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rclify.errors import UsageError
from rclify.transform import build_flags


def quiet(message: str) -> None:
    pass


def test_database_flags_are_per_file_with_absolute_include_paths(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.c").write_text("int a;\n")
    (tmp_path / "b.c").write_text("int b;\n")
    (tmp_path / "compile_commands.json").write_text(json.dumps([
        {"directory": str(tmp_path), "file": "src/a.c",
         "command": "cc -O2 -Wall -Iinclude -I /opt/x -DFOO=1 -include cfg.h -std=gnu99 -c src/a.c -o a.o"},
        {"directory": str(tmp_path / "src"), "arguments": ["cc", "-I..", "-DBAR", "-c", "../b.c"], "file": "../b.c"},
    ]))
    flags = build_flags.find(tmp_path, None, ["-DUSER"], quiet)
    assert flags.for_file(tmp_path / "src" / "a.c") == [
        f"-I{tmp_path / 'include'}", "-I/opt/x", "-DFOO=1", "-include", str(tmp_path / "cfg.h"), "-std=gnu99", "-DUSER"]
    assert flags.for_file(tmp_path / "b.c") == [f"-I{tmp_path}", "-DBAR", "-DUSER"]
    assert flags.built(tmp_path / "b.c") and not flags.built(tmp_path / "c.c")
    assert flags.source.startswith("compile_commands.json")


def test_a_file_the_database_does_not_list_gets_the_flags_of_its_directory(tmp_path):
    """xz 5.4.1: CMake builds crc32_fast.c, not crc32_small.c beside it, nor the xz program's
    include paths for liblzma's; a file it leaves out (parsed anyway: its lock API is rewritten)
    found its own headers through the flags of its directory's files, not the whole build's."""
    lib, check, prog = tmp_path / "src/liblzma", tmp_path / "src/liblzma/check", tmp_path / "src/xz"
    for d in (check, prog, lib / "common"):
        d.mkdir(parents=True)
    (lib / "common/common.h").write_text("#define ALIGNED 1\n")
    (check / "crc32_fast.c").write_text('#include "common.h"\n')
    (check / "crc32_small.c").write_text('#include "common.h"\n')
    (prog / "main.c").write_text("int main(void) { return 0; }\n")
    (tmp_path / "compile_commands.json").write_text(json.dumps([
        {"directory": str(tmp_path), "file": "src/liblzma/check/crc32_fast.c",
         "command": "cc -DLIB -Isrc/liblzma/common -Isrc/common -c src/liblzma/check/crc32_fast.c"},
        {"directory": str(tmp_path), "file": "src/xz/main.c", "command": "cc -Isrc/common -c src/xz/main.c"},
    ]))
    flags = build_flags.find(tmp_path, None, ["-DUSER"], quiet)
    small = check / "crc32_small.c"
    assert not flags.built(small)
    assert flags.for_file(small) == [f"-I{tmp_path}", "-DLIB", f"-I{lib / 'common'}", f"-I{tmp_path / 'src/common'}", "-DUSER"]
    assert flags.for_file(lib / "common/other.c") == flags.for_file(small)  # the nearest directory with listed files
    assert flags.for_file(prog / "extra.c") == [f"-I{tmp_path}", f"-I{tmp_path / 'src/common'}", "-DUSER"]
    assert flags.for_file(tmp_path / "tools/gen.c") == flags.default == [f"-I{tmp_path}", f"-I{tmp_path / 'src/common'}", "-DUSER"]
    from rclify.ctext import cparse
    assert cparse.parse(small, flags.for_file(small)).stubbed == []


def test_a_database_naming_only_missing_files_is_one_clear_error(tmp_path):
    (tmp_path / "compile_commands.json").write_text(json.dumps(
        [{"directory": str(tmp_path), "file": "gone.c", "command": "cc -c gone.c"}]))
    with pytest.raises(UsageError, match="names only files that do not exist"):
        build_flags.find(tmp_path, None, [], quiet)
    with pytest.raises(UsageError, match="no compile_commands.json"):
        build_flags.find(tmp_path, tmp_path / "nowhere", [], quiet)


def test_the_guess_adds_the_directories_of_included_headers(tmp_path):
    for rel, text in {"include/uv.h": "", "src/uv-common.h": "", "src/unix/core.c": '#include "uv.h"\n#include "uv-common.h"\n',
                      "src/unix/internal.h": "", "src/unix/loop.c": '#include "internal.h"\n'}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    flags = build_flags.find(tmp_path, None, [], quiet)
    assert flags.default == [f"-I{tmp_path}", f"-I{tmp_path / 'include'}", f"-I{tmp_path / 'src'}"]
    assert flags.built(tmp_path / "src/unix/core.c")  # without a database every file counts as built


def test_an_unconfigured_autotools_tree_is_configured_in_a_scratch_copy(tmp_path):
    (tmp_path / "configure.ac").write_text("AC_INIT([t], [1])\nAC_CONFIG_HEADERS([lib_config.h])\n")
    (tmp_path / "configure").write_text("#!/bin/sh\necho '#define HAVE_THING 1' > lib_config.h\n")
    (tmp_path / "a.c").write_text('#include "lib_config.h"\n#include "queue.h"\n')
    (tmp_path / "queue.h").write_text("int queue_len;\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    messages = []
    flags = build_flags.find(tmp_path, None, [], messages.append)
    try:
        assert sorted(p.name for p in tmp_path.iterdir()) == before  # the tree is not touched
        at = flags.default.index("-idirafter")
        generated = Path(flags.default[at + 1])
        assert "rclify-configure" in str(generated)
        assert (generated / "lib_config.h").read_text() == "#define HAVE_THING 1\n"
        assert "-DHAVE_CONFIG_H" in flags.default
        assert any("running ./configure in a scratch copy" in m for m in messages)
        # the tree's own headers win over the copy's: only what configure generated comes from it
        from rclify.ctext import cparse
        tu = cparse.parse(tmp_path / "a.c", flags.for_file(tmp_path / "a.c")).tu
        included = {Path(i.include.name).resolve() for i in tu.get_includes()}
        assert (tmp_path / "queue.h").resolve() in included and (generated / "lib_config.h").resolve() in included
    finally:
        flags.cleanup()
    assert not generated.exists()


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed (scripts/setup.sh installs it)")
def test_a_cmake_tree_gives_its_compile_database(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.c").write_text("int main(void) { return 0; }\n")
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.10)\nproject(t C)\nadd_executable(t src/a.c)\n"
        "target_include_directories(t PRIVATE include)\ntarget_compile_definitions(t PRIVATE FROM_CMAKE=1)\n")
    flags = build_flags.find(tmp_path, None, [], quiet)
    try:
        assert f"-I{tmp_path / 'include'}" in flags.for_file(tmp_path / "src" / "a.c")
        assert "-DFROM_CMAKE=1" in flags.for_file(tmp_path / "src" / "a.c")
        assert not (tmp_path / "CMakeCache.txt").exists()  # configured out of the tree
    finally:
        flags.cleanup()


@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("bear") is None,
                    reason="cmake or bear is not installed (scripts/setup.sh installs them)")
def test_another_platforms_cmake_build_gives_way_to_configure_and_its_make(tmp_path):
    """apr's shape: a CMakeLists.txt that builds the Windows sources, a configure script that
    writes the Unix build (a Makefile with flags of its own) and a header from a template
    (apr.h, not an AC_CONFIG_HEADERS one).  The CMake database compiles none of the files that
    use pthread mutexes, so the build configure writes is run under bear instead."""
    (tmp_path / "win32").mkdir()
    (tmp_path / "unix").mkdir()
    (tmp_path / "win32" / "lock.c").write_text("int win_lock;\n")
    (tmp_path / "unix" / "lock.c").write_text(
        '#include "lib.h"\n#include <pthread.h>\n'
        "void take(pthread_mutex_t *m) { pthread_mutex_lock(m); pthread_mutex_unlock(m); }\n")
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.10)\nproject(t C)\nadd_library(t win32/lock.c)\n")
    (tmp_path / "configure.ac").write_text("AC_INIT([t], [1])\nAC_CONFIG_HEADERS([cfg.h])\n")
    (tmp_path / "configure").write_text(
        "#!/bin/sh\necho '#define HAVE_THING 1' > cfg.h\necho '#define LIB_UNIX 1' > lib.h\n"
        "printf 'all:\\n\\tcc -DFROM_CONFIGURE -c unix/lock.c -o lock.o\\n' > Makefile\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    messages = []
    flags = build_flags.find(tmp_path, None, [], messages.append)
    try:
        assert sorted(p.name for p in tmp_path.iterdir()) == before  # the tree is not touched
        assert any("compiles none of the 1 C files that use pthread mutexes" in m for m in messages)
        assert "after ./configure" in flags.source
        words = flags.for_file(tmp_path / "unix" / "lock.c")
        assert "-DFROM_CONFIGURE" in words
        generated = Path(words[words.index("-idirafter") + 1])  # where lib.h was written, searched last
        assert (generated / "lib.h").read_text() == "#define LIB_UNIX 1\n"
    finally:
        flags.cleanup()


def test_transform_finds_headers_the_build_would(tmp_path):
    """End to end: a region in a file whose header lives in include/ is extracted, not refused
    for parse errors, with no flags given (the guess)."""
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "counter.h").write_text(
        "#include <pthread.h>\ntypedef struct { pthread_mutex_t lock; long n; } counter_t;\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "counter.c").write_text(
        '#include "counter.h"\nvoid counter_add(counter_t *c, long d)\n{\n'
        "    pthread_mutex_lock(&c->lock);\n    c->n += d;\n    pthread_mutex_unlock(&c->lock);\n}\n")
    report = tmp_path.parent / f"{tmp_path.name}.json"
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tmp_path), "--dry-run", "-q",
                           "--report", str(report)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    regions = json.loads(report.read_text())["regions"]
    assert [(r["file"], r["status"]) for r in regions] == [("src/counter.c", "extracted")]


_HASH_HEADER = """#ifndef HASH_INL_H
#define HASH_INL_H
#include <pthread.h>
static pthread_mutex_t hash_lock = PTHREAD_MUTEX_INITIALIZER;
static int hash_size;
static inline int hash_grow(void)
{
    int n;
    pthread_mutex_lock(&hash_lock);
    n = ++hash_size;
    pthread_mutex_unlock(&hash_lock);
    return n;
}
#endif
"""


@pytest.mark.parametrize("built_includes_it", [False, True])
def test_a_header_only_unbuilt_files_include_is_not_built(tmp_path, built_includes_it):
    """libuv's src/win/fs-fd-hash-inl.h: a header's sections are seen through a C file the
    compile database lists when one includes it (extracted, compile-checked), else they are as
    unverifiable as the files that include it (not-built), whichever file sorts first."""
    (tmp_path / "a_win.c").write_text('#include "hash_inl.h"\nint win_grow(void) { return hash_grow(); }\n')
    (tmp_path / "hash_inl.h").write_text(_HASH_HEADER)
    (tmp_path / "z_linux.c").write_text(('#include "hash_inl.h"\nint linux_grow(void) { return hash_grow(); }\n'
                                         if built_includes_it else "int linux_grow(void) { return 0; }\n"))
    (tmp_path / "compile_commands.json").write_text(json.dumps(
        [{"directory": str(tmp_path), "file": "z_linux.c", "command": "cc -c z_linux.c -o z_linux.o"}]))
    report = tmp_path.parent / f"{tmp_path.name}.json"
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tmp_path), "--dry-run", "-q",
                           "--report", str(report)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    regions = [(r["file"], r["status"], r.get("reason")) for r in json.loads(report.read_text())["regions"]]
    assert regions == ([("hash_inl.h", "extracted", None)] if built_includes_it
                       else [("hash_inl.h", "hybrid", "not-built")])


_GENERATED_HEADER_MAKEFILE = """all: prog.o
config-host.h:
\techo '#define COUNTER_TYPE long' > config-host.h
prog.o: config-host.h prog.c
\t$(CC) -include config-host.h -pthread -c prog.c -o prog.o
"""

_COUNTER = ("#include <pthread.h>\nstatic pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;\n"
            "static COUNTER_TYPE counter;\nvoid bump(void)\n{\n    pthread_mutex_lock(&lock);\n"
            "    counter++;\n    pthread_mutex_unlock(&lock);\n}\n")


def _transform_report(tree: Path) -> tuple[dict, str]:
    report = tree.parent / f"{tree.name}.json"
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "--dry-run", "--configure",
                           "--report", str(report)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(report.read_text()), proc.stdout + proc.stderr


def test_a_makefile_tree_built_under_bear_keeps_the_forced_includes_its_build_generates(tmp_path):
    """fio: `make` generates config-host.h and compiles with `-include config-host.h`, a path
    relative to the build directory; the database's paths moved back into the tree named a file
    the tree lacks, so no file compiled, in the analysis or in the compile check."""
    if shutil.which("bear") is None:
        pytest.fail("bear is not installed (scripts/setup.sh installs it)")
    (tmp_path / "Makefile").write_text(_GENERATED_HEADER_MAKEFILE)
    (tmp_path / "prog.c").write_text(_COUNTER)
    data, out = _transform_report(tmp_path)
    assert "make under bear" in data["build_flags"]
    assert not (tmp_path / "config-host.h").exists()  # built in the scratch copy
    assert [(r["file"], r["status"]) for r in data["regions"]] == [("prog.c", "extracted")]
    assert data["unverified_files"] == {}
    assert "include headers only the build makes (config-host.h)" in out  # why not the dry run's
    # a tree built already: its generated header is there, and the dry run (make -n -B) is enough
    subprocess.run(["make"], cwd=tmp_path, check=True, capture_output=True)
    data, out = _transform_report(tmp_path)
    assert "make -n (1 compiles of a dry run: nothing built)" in data["build_flags"]
    assert [(r["file"], r["status"]) for r in data["regions"]] == [("prog.c", "extracted")]
    assert data["unverified_files"] == {}


def test_changed_files_that_never_compiled_are_reported_unverified(tmp_path):
    """A changed file that does not compile before the transform either (a header its build would
    generate, no build to run) cannot be checked for compiling: the summary says so."""
    (tmp_path / "prog.c").write_text('#include "generated.h"\n' + _COUNTER)
    data, out = _transform_report(tmp_path)
    assert list(data["unverified_files"]) == ["prog.c"]
    assert "generated.h" in data["unverified_files"]["prog.c"]
    assert "warning: 1 changed files did not compile before the transform either" in out


def test_a_package_whose_makefile_is_in_its_one_subfolder_is_built_there(tmp_path):
    """squashfs-tools' Debian package: the sources and the Makefile are in squashfs-tools/, the
    root has none; the flags were guessed and its two main files did not compile with them."""
    if shutil.which("bear") is None:
        pytest.fail("bear is not installed (scripts/setup.sh installs it)")
    (tmp_path / "debian").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "Makefile").write_text(_GENERATED_HEADER_MAKEFILE)
    (tmp_path / "tools" / "prog.c").write_text(_COUNTER)
    data, out = _transform_report(tmp_path)
    assert "make` in tools/ under bear" in out
    assert "make under bear" in data["build_flags"]
    assert [(r["file"], r["status"]) for r in data["regions"]] == [("tools/prog.c", "extracted")]
    assert data["unverified_files"] == {}


def test_a_dry_run_runs_no_build_script_unless_told(tmp_path):
    """A build script may do anything (delete files): a dry run guesses the flags instead, and
    --configure runs the build in a scratch copy as a transform does."""
    if shutil.which("bear") is None:
        pytest.fail("bear is not installed (scripts/setup.sh installs it)")
    witness = tmp_path.parent / f"{tmp_path.name}-ran"  # made when the Makefile is read: by make -n too
    (tmp_path / "Makefile").write_text(f"X := $(shell touch {witness})\nall: prog.o\n"
                                       "prog.o: prog.c\n\t$(CC) -pthread -c prog.c -o prog.o\n")
    (tmp_path / "prog.c").write_text(_COUNTER.replace("COUNTER_TYPE", "long"))
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tmp_path), "--dry-run"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert not witness.exists() and "not run for a dry run" in proc.stdout + proc.stderr
    _transform_report(tmp_path)  # --dry-run --configure
    assert witness.exists()


def test_a_meson_tree_gives_its_compile_database(tmp_path):
    if shutil.which("meson") is None:
        pytest.fail("meson is not installed (scripts/setup.sh installs it)")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.c").write_text("int main(void) { return 0; }\n")
    (tmp_path / "meson.build").write_text(
        "project('t', 'c')\nexecutable('t', 'src/a.c', include_directories: include_directories('include'),\n"
        "  c_args: ['-DFROM_MESON=1'])\n")
    (tmp_path / "include").mkdir()
    flags = build_flags.find(tmp_path, None, [], quiet)
    try:
        assert flags.source.startswith("Meson's compile_commands.json")
        assert "-DFROM_MESON=1" in flags.for_file(tmp_path / "src" / "a.c")
        scratch = list(flags.scratch)
        assert scratch and not (tmp_path / "build.ninja").exists()  # set up out of the tree
    finally:
        flags.cleanup()
    assert not any(d.exists() for d in scratch)


def test_a_file_built_in_several_configurations_is_analysed_in_the_one_with_threads(tmp_path):
    """A library built static without threads and shared with them (the same file twice in the
    database): the threaded configuration is the one whose locks ship, whichever comes last."""
    (tmp_path / "lib.c").write_text("int x;\n")
    (tmp_path / "other.c").write_text("int y;\n")
    (tmp_path / "compile_commands.json").write_text(json.dumps([
        {"directory": str(tmp_path), "file": "lib.c", "command": "cc -pthread -DHAVE_THREADS=1 -c lib.c -o shared/lib.o"},
        {"directory": str(tmp_path), "file": "lib.c", "command": "cc -DHAVE_THREADS=0 -c lib.c -o static/lib.o"},
        {"directory": str(tmp_path), "file": "other.c", "command": "cc -DNO_THREADS -c other.c"},
        {"directory": str(tmp_path), "file": "other.c", "command": "cc -DMULTITHREAD -c other.c"},
    ]))
    flags = build_flags.find(tmp_path, None, [], quiet)
    assert "-DHAVE_THREADS=1" in flags.for_file(tmp_path / "lib.c")
    assert "-DMULTITHREAD" in flags.for_file(tmp_path / "other.c")
    assert "2 compiled in several configurations: each analysed in one with threads" in flags.source


def test_libtools_pic_and_static_compiles_are_one_configuration(tmp_path):
    (tmp_path / "lib.c").write_text("int x;\n")
    (tmp_path / "compile_commands.json").write_text(json.dumps([
        {"directory": str(tmp_path), "file": "lib.c", "command": "cc -DHAVE_CONFIG_H -c lib.c -fPIC -DPIC -o .libs/lib.o"},
        {"directory": str(tmp_path), "file": "lib.c", "command": "cc -DHAVE_CONFIG_H -c lib.c -o lib.o"},
    ]))
    flags = build_flags.find(tmp_path, None, [], quiet)
    assert "several configurations" not in flags.source
