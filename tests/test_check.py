"""rclify check on small synthetic trees: a passing suite, a failing one, a build that fails, a suite
that hangs, and the parsers of common test-harness outputs."""

import json
import os
import shutil
import textwrap
from pathlib import Path

import tomllib

import pytest

from rclify import check, runtime_build
from rclify.cli import main
from rclify.errors import BuildError, ToolMissingError, UsageError
from rclify.paths import RUNTIME_DIR

# The runtime's header is enough to compile these trees; no need to build the runtime library.
FLAGS = ([f"-I{RUNTIME_DIR / 'include'}"], ["-lm"])

needs_toolchain = pytest.mark.skipif(
    not (shutil.which("make") and shutil.which("cc") and shutil.which("prove")),
    reason="needs make, cc and prove (bash scripts/setup.sh)",
)

PROG = '#include <rclify.h>\n#include <stdio.h>\nint main(void) { puts("built with rclify.h"); return 0; }\n'
T_PASS = 'use Test::More tests => 2;\nok(1, "one");\nok(`./prog` =~ /rclify/, "prog runs");\n'
T_SKIP = 'use Test::More skip_all => "not here";\n'
T_FAIL = 'use Test::More tests => 3;\nok(1);\nok(0, "broken");\nok(1);\n'


def make_tree(root: Path, tests: dict[str, str], prog: str = PROG, test_recipe: str = "prove t") -> Path:
    """A plain-Makefile program whose `make test` runs prove over t/*.t."""
    (root / "t").mkdir(parents=True)
    (root / "prog.c").write_text(prog)
    (root / "Makefile").write_text(
        textwrap.dedent(
            """\
            CFLAGS = -O1 -Wall
            prog: prog.c
            \t$(CC) $(CFLAGS) -o $@ prog.c $(LDLIBS)
            test: prog
            \t{recipe}
            """
        ).format(recipe=test_recipe)
    )
    for name, body in tests.items():
        (root / "t" / name).write_text(body)
    return root


def use_fake_runtime(monkeypatch):
    """The CLI path builds the runtime: replace it with the header-only flags."""
    monkeypatch.setattr(runtime_build, "build_runtime", lambda quiet=True: None)
    monkeypatch.setattr(runtime_build, "cflags", lambda: FLAGS[0])
    monkeypatch.setattr(runtime_build, "libs", lambda: FLAGS[1])


@needs_toolchain
def test_passing_suite_reports_counts_and_records_the_plan(tmp_path, capsys):
    tree = make_tree(tmp_path / "ok", {"a.t": T_PASS, "b.t": T_SKIP})
    report = check.run_check(tree, locks=["*=posix", "config", "*=rcl"], flags=FLAGS)
    out = capsys.readouterr().out
    assert report.ok
    assert [r.status for r in report.tests] == ["PASS"] * 3
    assert [(r.counts.passed, r.counts.failed, r.counts.skipped, r.counts.source) for r in report.tests] == [
        (2, 0, 1, "prove")
    ] * 3
    table = out[out.index("assignment") :].splitlines()
    assert table[1].split()[:7] == ["*=posix", "ok", "PASS", "2", "0", "1", "prove"]
    assert table[2].split()[0] == "config" and table[3].split()[0] == "*=rcl"
    # the runtime's flags reached the compiler and the linker, appended to the makefile's own CFLAGS
    build_log = (tree / ".rclify/logs/build.log").read_text()
    assert f"-O1 -Wall -I{RUNTIME_DIR / 'include'}" in build_log and "-lm" in build_log
    recorded = check.read_config(tree)
    assert recorded["system"] == "make" and recorded["test"] == 'make -f Makefile -f "$RCLIFY_MK" test'
    # a rerun takes the recorded plan
    check.run_check(tree, flags=FLAGS)
    assert "make build (from rclify.toml)" in capsys.readouterr().out


@needs_toolchain
def test_each_assignment_reaches_the_tests_and_config_means_no_override(tmp_path):
    tree = make_tree(tmp_path / "env", {"a.t": T_PASS})
    report = check.run_check(
        tree, test='echo "locks=${RCLIFY_LOCKS-unset}"', locks=["*=rcl", "config"], flags=FLAGS
    )
    logs = [r.log.read_text() for r in report.tests]
    assert "locks=*=rcl" in logs[0] and "locks=unset" in logs[1]
    assert [r.counts for r in report.tests] == [None, None]  # no counts: exit code only
    assert check.read_config(tree)["system"] == "make"  # --test alone keeps the detected build


@needs_toolchain
def test_failing_suite_exits_1_and_prints_the_log(tmp_path, monkeypatch, capsys):
    use_fake_runtime(monkeypatch)
    tree = make_tree(tmp_path / "fail", {"a.t": T_PASS, "c.t": T_FAIL})
    assert main(["check", str(tree), "--locks", "*=posix", "--locks", "*=rcl"]) == 1
    out = capsys.readouterr().out
    log = tree / ".rclify/logs/test-1-all_posix.log"
    assert f"*=posix: {log}" in out
    assert "Failed test 'broken'" in log.read_text() or "broken" in log.read_text()
    rows = out[out.index("assignment") :].splitlines()[1:3]
    assert [r.split()[:6] for r in rows] == [
        ["*=posix", "ok", "FAIL", "4", "1", "0"],
        ["*=rcl", "ok", "FAIL", "4", "1", "0"],
    ]


@needs_toolchain
def test_build_failure_stops_with_the_log(tmp_path, monkeypatch, capsys):
    tree = make_tree(tmp_path / "broken", {"a.t": T_PASS}, prog="int main(void) { return undeclared; }\n")
    with pytest.raises(BuildError, match=r"build failed \(exit 2\); the tests were not run; log: .*build\.log"):
        check.run_check(tree, flags=FLAGS)
    out = capsys.readouterr().out
    assert "build: FAILED (exit 2" in out and "undeclared" in out
    assert "(none run)" in out and "test 1/1" not in out
    use_fake_runtime(monkeypatch)
    assert main(["check", str(tree)]) == 2
    assert "rclify check: error: the build failed" in capsys.readouterr().err


@needs_toolchain
def test_hanging_suite_is_killed_at_the_timeout(tmp_path, capsys):
    pidfile = tmp_path / "sleeper.pid"
    tree = make_tree(tmp_path / "hang", {}, test_recipe=f"sleep 300 & echo $$! > {pidfile}; wait")
    report = check.run_check(tree, timeout=2, flags=FLAGS)
    assert not report.ok and report.tests[0].status == "TIMEOUT" and report.tests[0].rc is None
    assert 1.5 < report.tests[0].seconds < 15
    assert "killed after the 2.0s timeout" in report.tests[0].log.read_text()
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):  # the suite's children went with it
        os.kill(pid, 0)
    assert "TIMEOUT" in capsys.readouterr().out


def test_missing_build_tool_names_the_debian_package(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text("project(x C)\n")
    plan = check.detect(tmp_path)
    assert plan.system == "cmake" and plan.test.startswith("ctest ")
    with pytest.raises(ToolMissingError, match=r"'no-such-builder-xyz'.*install the Debian package"):
        check.run_check(tmp_path, build="no-such-builder-xyz --all", test="true", flags=FLAGS)
    err = check.missing_tool("make: x\n/bin/sh: 1: autoreconf: not found\n")
    assert str(err) == "'autoreconf' is not installed: apt-get install autoconf"
    err = check.missing_tool("./autogen.sh: 20: [: dev: unexpected operator\n./autogen.sh: 58: libtoolize: not found\n")
    assert str(err) == "'libtoolize' is not installed: apt-get install libtool"  # libuv's autogen.sh
    assert "apt-get install libevent-dev" in str(check.missing_tool("configure: error: libevent is required."))
    assert check.missing_tool("ok 3 - key: not found") is None


@needs_toolchain
def test_a_changed_runtime_cleans_the_tree_so_that_binaries_are_relinked(tmp_path, capsys):
    tree = make_tree(tmp_path / "p", {"a.t": T_PASS})
    with (tree / "Makefile").open("a") as f:  # the count shows how many times the tree was cleaned
        f.write("clean:\n\trm -f prog\n\techo cleaned >> clean-count\n")
    lib = tmp_path / "librclify.o"  # stands for the runtime object named in the link flags
    lib.write_text("runtime v1")
    flags = (FLAGS[0], [*FLAGS[1], str(lib)])
    # Not a real archive: the tree links without it, the fingerprint reads it.
    (tree / "Makefile").write_text((tree / "Makefile").read_text().replace("$(LDLIBS)", "-lm"))

    assert check.run_check(tree, flags=flags).ok
    assert "clean (first build by rclify check)" in capsys.readouterr().out
    assert 'clean = "make -f Makefile -f \\"$RCLIFY_MK\\" clean"' in (tree / "rclify.toml").read_text()

    assert check.run_check(tree, flags=flags).ok
    assert "clean (" not in capsys.readouterr().out  # same runtime: an incremental build
    assert (tree / "clean-count").read_text().count("cleaned") == 1

    lib.write_text("runtime v2")
    assert check.run_check(tree, flags=flags).ok
    assert "clean (the runtime changed since the last build)" in capsys.readouterr().out
    assert (tree / "clean-count").read_text().count("cleaned") == 2
    assert (tree / "prog").is_file()  # and built again


def test_an_rclify_toml_without_clean_gets_the_detected_one(tmp_path):
    tree = make_tree(tmp_path / "p", {"a.t": T_PASS})
    with (tree / "Makefile").open("a") as f:
        f.write("clean:\n\trm -f prog\n")
    (tree / "rclify.toml").write_text('[check]\nsystem = "make"\nbuild = "make"\ntest = "make test"\n')
    plan = check.make_plan(tree)
    assert (plan.origin, plan.build, plan.clean) == ("rclify.toml", "make", 'make -f Makefile -f "$RCLIFY_MK" clean')
    (tree / "rclify.toml").write_text('[check]\nsystem = "custom"\nbuild = "make"\ntest = "make test"\n')
    assert check.make_plan(tree).clean is None  # commands of the user's own: no guess


@needs_toolchain
def test_no_clean_command_warns_on_the_first_check(tmp_path, capsys):
    tree = make_tree(tmp_path / "p", {"a.t": T_PASS})
    assert check.run_check(tree, flags=FLAGS).ok
    out = capsys.readouterr().out
    assert "warning: first build by rclify check and no clean command is known" in out
    assert "\nclean = " not in (tree / "rclify.toml").read_text()


def test_a_custom_build_keeps_the_detected_clean_command_where_it_applies(tmp_path):
    """--build replaces the detected build command, not the knowledge of how the tree is cleaned:
    the detected clean command stays unless it plainly does not apply to that build (another
    build directory, no make at all), which a note says."""
    tree = make_tree(tmp_path / "p", {"a.t": T_PASS})
    with (tree / "Makefile").open("a") as f:
        f.write("clean:\n\trm -f prog\n")
    make_clean = 'make -f Makefile -f "$RCLIFY_MK" clean'
    plan = check.make_plan(tree, build="make CFLAGS=-O0 prog")
    assert (plan.system, plan.clean, plan.notes) == ("custom", make_clean, [])
    check.write_config(tree, plan)  # recorded with the build command, kept for it on the next run
    assert check.make_plan(tree, build="make CFLAGS=-O0 prog").clean == make_clean
    plan = check.make_plan(tree, build="./build.sh")
    assert plan.clean is None and plan.notes[0].startswith("--build does not run make")
    plan = check.make_plan(tree, build="make -C src")
    assert plan.clean is None and plan.notes[0].startswith("--build builds in src")

    cm = tmp_path / "cm"
    cm.mkdir()
    (cm / "CMakeLists.txt").write_text("project(x C)\n")
    detected = check.detect(cm).clean
    assert check.make_plan(cm, build="cmake -S . -B build-rclify -DX=1 && cmake --build build-rclify").clean == detected
    plan = check.make_plan(cm, build="cmake -S . -B out && cmake --build out -j4")  # a build dir of its own
    assert plan.clean == "[ ! -d out ] || cmake --build out --target clean" and "builds in out" in plan.notes[0]
    plan = check.make_plan(cm, build="mkdir -p b && cd b && cmake .. && make")
    assert plan.clean is None and "no clean command is known" in plan.notes[0]

    at = tmp_path / "at"
    at.mkdir()
    (at / "configure").write_text("#!/bin/sh\n")
    assert check.make_plan(at, build="./configure --enable-debug && make").clean == "[ ! -f Makefile ] || make clean"
    plan = check.make_plan(at, build="mkdir -p b && cd b && ../configure && make")  # out of tree
    assert plan.clean is None and plan.notes[0].startswith("--build builds in b")


@needs_toolchain
def test_a_custom_build_of_a_detected_tree_is_cleaned_on_the_first_check(tmp_path, capsys):
    tree = make_tree(tmp_path / "p", {"a.t": T_PASS})
    with (tree / "Makefile").open("a") as f:
        f.write("clean:\n\trm -f prog\n")
    assert check.run_check(tree, build='make CFLAGS="$RCLIFY_CFLAGS" LDLIBS="$RCLIFY_LIBS" prog', flags=FLAGS).ok
    out = capsys.readouterr().out
    assert 'clean (first build by rclify check): make -f Makefile -f "$RCLIFY_MK" clean' in out
    assert "no clean command is known" not in out


def test_autotools_detection_and_werror_note(tmp_path):
    (tmp_path / "configure.ac").write_text('CFLAGS="$CFLAGS -Wall -Werror"\n')
    (tmp_path / "Makefile.am").write_text("test: all\n\tprove t\n")
    plan = check.detect(tmp_path)
    assert plan.system == "autotools"
    assert plan.build.startswith('autoreconf -fi && ./configure CFLAGS="-g -O2 $RCLIFY_CFLAGS" LIBS="$RCLIFY_LIBS"')
    assert plan.test == "make test" and "-Werror" in plan.notes[0]
    (tmp_path / "configure").write_text("#!/bin/sh\n")
    (tmp_path / "Makefile.am").write_text("check_PROGRAMS = x\n")
    assert check.detect(tmp_path).build.startswith("./configure ")
    assert check.detect(tmp_path).test == "make check"


def test_a_configure_of_the_trees_own_is_run_plain_and_make_gets_the_flags(tmp_path):
    """fio: a hand-written configure that rejects autoconf's CFLAGS=... arguments (it printed its
    --help and the build failed), a Makefile with `test:` (make check was recorded)."""
    (tmp_path / "configure").write_text("#!/bin/sh\n# fio configure\n")
    (tmp_path / "Makefile").write_text("all:\n\ttrue\ntest: all\n\t./fio --version\nclean:\n\trm -f fio\n")
    plan = check.detect(tmp_path)
    assert plan.system == "configure+make"
    assert plan.build == './configure && make -f Makefile -f "$RCLIFY_MK" -j"$RCLIFY_JOBS"'
    assert plan.test == 'make -f Makefile -f "$RCLIFY_MK" test'
    assert plan.clean == 'make -f Makefile -f "$RCLIFY_MK" clean'
    (tmp_path / "configure").write_text("#!/bin/sh\n# Generated by GNU Autoconf 2.71 for x 1.0.\n")
    assert check.detect(tmp_path).system == "autotools"


def test_no_build_system_or_test_target_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no configure, configure.ac, CMakeLists.txt or Makefile"):
        check.detect(tmp_path)
    (tmp_path / "Makefile").write_text("all:\n\ttrue\n")
    with pytest.raises(UsageError, match="no 'test' or 'check' target"):
        check.detect(tmp_path)


def test_rclify_toml_keeps_other_tables_and_optional_keys(tmp_path):
    (tmp_path / "rclify.toml").write_text('[transform]\nskip = ["a.c"]\n\n[check]\nbuild = "x"\ntest = "y"\nlocks = ["*=rcl"]\n')
    plan = check.make_plan(tmp_path, build="make all")
    assert (plan.system, plan.build, plan.test, plan.origin) == ("custom", "make all", "y", "command line")
    check.write_config(tmp_path, plan)
    text = (tmp_path / "rclify.toml").read_text()
    assert tomllib.loads(text)["transform"] == {"skip": ["a.c"]}
    assert check.read_config(tmp_path) | {} == {"system": "custom", "build": "make all", "test": "y", "locks": ["*=rcl"]}
    # written again (each `rclify check` records its plan): the table's own comment names a list
    # (`locks = ["*=posix", ...]`), which once ended the old table early and left its tail behind
    (tmp_path / "rclify.toml").write_text(text + '\n[other]\nkey = 1\n')
    for _ in range(3):
        check.write_config(tmp_path, plan)
    text = (tmp_path / "rclify.toml").read_text()
    assert text.count("[check]") == 1 and text.count("system =") == 1 and tomllib.loads(text)["other"] == {"key": 1}
    assert check.read_config(tmp_path)["build"] == "make all"
    (tmp_path / "rclify.toml").write_text("[check]\nbuild = 3\n")
    with pytest.raises(UsageError, match="build has the wrong type"):
        check.read_config(tmp_path)


def test_rclify_toml_round_trips_any_command_text(tmp_path):
    # written by a TOML library: quotes, backslashes, control characters and emoji come back as given
    build = 'make CFLAGS="$RCLIFY_CFLAGS" && echo "done \\o/ \U0001F680\t"'
    check.write_config(tmp_path, check.make_plan(tmp_path, build=build, test="./t 'a b'"))
    assert check.read_config(tmp_path)["build"] == build
    assert check.make_plan(tmp_path).build == build


def test_test_without_build_uses_the_detected_build(tmp_path):
    (tmp_path / "Makefile").write_text("all:\n\ttrue\n")  # no test target: --test says how
    plan = check.make_plan(tmp_path, test="./run-tests")
    assert (plan.system, plan.test) == ("make", "./run-tests") and "make" in plan.build


@pytest.mark.parametrize(
    "spec, error",
    [("*=posix", None), ("config", None), ("items.c:cache_lock=rcl:1@3, *=posix", None),
     ("*=rlc", "unknown algorithm 'rlc'"), ("rcl", "expected PATTERN=ALG"), ("*=rcl:64", "from 0 to 63")],
)
def test_lock_specs_are_checked_like_the_runtime_does(spec, error):
    if error is None:
        assert check.validate_override(spec) == spec
    else:
        with pytest.raises(UsageError, match=error):
            check.validate_override(spec)


PROVE_FAIL = """\
t/a.t ....... ok
t/b.t ....... skipped: no sasl
t/c.t ....... 1/3
#   Failed test 'broken'
t/c.t ....... Failed 1/3 subtests
t/d.t ....... Dubious, test returned 255 (wstat 65280, 0xff00)
No subtests run

Test Summary Report
-------------------
t/c.t      (Wstat: 256 (exited 1) Tests: 3 Failed: 1)
  Failed test:  2
t/d.t (Wstat: 65280 (exited 255) Tests: 0 Failed: 0)
  Parse errors: No plan found in TAP output
Files=4, Tests=5,  1 wallclock secs ( 0.02 usr +  0.01 sys =  0.03 CPU)
Result: FAIL
"""

AUTOMAKE = """\
PASS: t1
SKIP: t2
FAIL: t3
============================================================================
# TOTAL: 4
# PASS:  2
# SKIP:  1
# XFAIL: 0
# FAIL:  1
# XPASS: 0
# ERROR: 0
"""

CTEST = """\
    Start 1: a
1/3 Test #1: a ................   Passed    0.01 sec
2/3 Test #2: b ................***Skipped   0.00 sec
3/3 Test #3: c ................***Failed    0.01 sec

67% tests passed, 1 tests failed out of 3

The following tests did not run:
\t  2 - b (Skipped)

The following tests FAILED:
\t  3 - c (Failed)
"""


@pytest.mark.parametrize(
    "text, expected",
    [
        (PROVE_FAIL, (4, 2, 1, "prove")),
        ("All tests successful.\nFiles=95, Tests=1234, 400 wallclock secs\nResult: PASS\n", (1234, 0, 0, "prove")),
        (AUTOMAKE, (2, 1, 1, "automake")),
        ("All 5 tests passed\n", (5, 0, 0, "automake")),
        ("2 of 7 tests failed\n(1 test was not run)\n", (5, 2, 1, "automake")),
        (CTEST, (1, 1, 1, "ctest")),
        ("1..3\nok 1 - a\nnot ok 2 - b\nok 3 # SKIP none\n", (1, 1, 1, "tap")),
        ("tests/adjacent.t: passed\n!\n--- tests/x.t\n+++ tests/x.t.err\n# Ran 43 tests, 2 skipped, 1 failed.\n",
         (40, 1, 2, "cram")),
    ],
)
def test_parse_counts(text, expected):
    c = check.parse_counts(text)
    assert (c.passed, c.failed, c.skipped, c.source) == expected


def test_prove_failures_reads_padded_and_unpadded_summary_lines():
    assert check.prove_failures(PROVE_FAIL) == [("t/c.t", 1), ("t/d.t", 0)]
    assert check.prove_failures("t/a.t .. ok\nAll tests successful.\n") == []


def test_no_counts_means_exit_code_only():
    assert check.parse_counts("make: Nothing to be done for 'test'.\n") is None


RCL_PROG = ('#include <rclify.h>\nstatic rcl_mutex_t m;\n'
            'int main(void) { rcl_mutex_lock(&m); rcl_mutex_unlock(&m); return 0; }\n')


@needs_toolchain
def test_a_link_line_without_the_runtime_says_where_its_libraries_go(tmp_path, monkeypatch, capsys):
    tree = make_tree(tmp_path / "hardcoded", {"a.t": T_PASS}, prog=RCL_PROG)
    makefile = tree / "Makefile"  # the link line names -lpthread itself and never $(LDLIBS)
    makefile.write_text(makefile.read_text().replace("prog.c $(LDLIBS)", "prog.c -lpthread"))
    before = {p: p.read_bytes() for p in (tree / "prog.c", makefile)}
    use_fake_runtime(monkeypatch)
    assert main(["check", str(tree)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "rclify check: error: the link failed on undefined references to the rclify runtime (rcl_"
    ) and "rcl_mutex_" in err[0], err
    assert "$(LDLIBS) or $(LIBS)" in err[0] and "rclify flags --libs" in err[0] and "build.log" in err[0]
    assert {p: p.read_bytes() for p in before} == before


def test_undefined_runtime_references_are_read_from_gnu_ld_and_lld_logs():
    gnu = "/usr/bin/ld: prog.o: in function `main':\nprog.c:(.text+0x9): undefined reference to `rcl_execute'\n"
    lld = "ld.lld: error: undefined symbol: rcl_mutex_init\n>>> referenced by prog.c\n"
    assert "(rcl_execute)" in str(check.runtime_not_linked(gnu))
    assert "(rcl_mutex_init)" in str(check.runtime_not_linked(lld))
    assert check.runtime_not_linked("undefined reference to `event_base_new'") is None


@needs_toolchain
def test_json_output_of_the_cli(tmp_path, monkeypatch, capsys):
    use_fake_runtime(monkeypatch)
    tree = make_tree(tmp_path / "mixed", {"a.t": T_PASS, "b.t": T_FAIL})
    out_json = tmp_path / "check.json"
    assert main(["check", str(tree), "--locks", "*=posix", "--json", str(out_json)]) == 1
    data = json.loads(out_json.read_text())
    assert data["ok"] is False and data["plan"]["system"] == "make" and data["build"]["status"] == "PASS"
    (run,) = data["tests"]
    assert (run["name"], run["status"], run["counts"]["failed"], run["counts"]["source"]) == \
        ("*=posix", "FAIL", 1, "prove")
    capsys.readouterr()
    assert main(["check", str(tree), "--json", str(tmp_path / "none" / "c.json")]) == 2  # before building
    assert capsys.readouterr().err.count("\n") == 1


AUTOMADE = "# Makefile.in generated by automake 1.16.5 from Makefile.am.\n"


def test_make_check_of_an_automake_tree_that_lists_no_tests_is_known_to_run_none(tmp_path):
    """libusb's: its test programs are noinst_PROGRAMS, and `make check` runs none of them."""
    tree = tmp_path / "usb"
    (tree / "tests").mkdir(parents=True)
    (tree / "Makefile.in").write_text(AUTOMADE + "check-am: all-am\ncheck: check-recursive\n")
    (tree / "tests" / "Makefile.in").write_text(AUTOMADE + "check-am: all-am\ncheck: check-am\n")
    (tree / "doc").mkdir()
    (tree / "doc" / "Makefile.in").write_text("docs:\n\tdoxygen\n")  # a template configure fills in
    why = check.automake_runs_no_test(tree, "make check")
    assert "runs none" in why
    assert check.automake_runs_no_test(tree, "make test") == ""  # another command: nothing known
    for runs_tests in (AUTOMADE + "check-TESTS: $(TESTS)\n", AUTOMADE + "check-local:\n\t./run\n",
                       "check: all\n\t./testall\n"):  # the last, apr's hand-written Makefile.in
        (tree / "tests" / "Makefile.in").write_text(runs_tests)
        assert check.automake_runs_no_test(tree, "make check") == "", runs_tests
    for name in ("tests/Makefile.in", "Makefile.in", "doc/Makefile.in"):  # before automake ran
        (tree / name).unlink()
    (tree / "tests" / "Makefile.am").write_text("noinst_PROGRAMS = stress\n")
    assert check.automake_runs_no_test(tree, "make check") == why
    (tree / "tests" / "Makefile.am").write_text("noinst_PROGRAMS = stress\nTESTS = stress\n")
    assert check.automake_runs_no_test(tree, "make check") == ""


@needs_toolchain
def test_a_suite_that_runs_no_test_is_no_pass(tmp_path, monkeypatch, capsys):
    use_fake_runtime(monkeypatch)
    tree = tmp_path / "quiet"
    tree.mkdir()
    (tree / "Makefile").write_text("all:\ncheck:\n\t@echo building the test programs\n")
    (tree / "Makefile.in").write_text(AUTOMADE + "check-am: all-am\ncheck: check-am\n")
    out_json = tmp_path / "check.json"
    assert main(["check", str(tree), "--build", "make", "--test", "make check", "--json", str(out_json)]) == 1
    out = capsys.readouterr().out
    assert "NO TESTS" in out and "`make check` ran no test" in out and "--test CMD" in out
    assert "test runs failed" not in out
    (run,) = json.loads(out_json.read_text())["tests"]
    assert run["status"] == "NO TESTS" and run["exit_code"] == 0 and "runs none" in run["runs_no_test"]
    (tree / "Makefile").write_text("all:\ncheck:\n\t@echo ok 1 - counted\n")  # counts in its output: ran
    assert main(["check", str(tree), "--build", "make", "--test", "make check"]) == 0
