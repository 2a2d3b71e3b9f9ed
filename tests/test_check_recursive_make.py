"""rclify check on a recursive make tree (issue 37): the runtime's flags reach every sub-make
(`cd src && $(MAKE)`), a sub-makefile's `override CFLAGS :=` and a dependency step that uses
CPPFLAGS alone included, the link gets the runtime once; and a test command with a command
substitution (`x-$(echo a).log`) is not refused as a missing tool."""

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from rclify import check
from rclify.check.plan import command_tools
from rclify.errors import BuildError
from rclify.paths import RUNTIME_DIR

needs_toolchain = pytest.mark.skipif(not (shutil.which("make") and shutil.which("cc")),
                                     reason="needs make and cc (bash scripts/setup.sh)")

TOP = """\
all:
\tcd src && $(MAKE) all
test: all
\tcd src && $(MAKE) test
clean:
\tcd src && $(MAKE) clean
"""

# a sub-make with its own CFLAGS (override), a dependency step that reads CPPFLAGS only, a
# library built by a sub-make of its own (two levels down) and a link through LDLIBS
SRC = """\
override CFLAGS := -O1 $(CFLAGS)
all: prog
.depend: prog.c
\t$(CC) -MM $(CPPFLAGS) prog.c > .depend
lib/libpart.a:
\t$(MAKE) -C lib
prog: prog.c .depend lib/libpart.a
\t$(CC) $(CFLAGS) -o $@ prog.c lib/libpart.a $(LDLIBS)
test: prog
\t./prog > result-$(shell echo run).txt && cat result-run.txt
clean:
\trm -f prog .depend result-run.txt
\t$(MAKE) -C lib clean
"""

LIB = """\
libpart.a: part.o
\t$(AR) rcs $@ part.o
part.o: part.c
\t$(CC) $(CFLAGS) -c part.c
clean:
\trm -f part.o libpart.a
"""

PROG = """#include <rclify.h>
#include <stdio.h>
int part(void);
int runtime_stand_in(void);
int main(void) { printf("part %d runtime %d\\n", part(), runtime_stand_in()); return 0; }
"""

PART = '#include <rclify.h>\nint part(void) { return 2; }\n'


def _tree(root: Path) -> tuple[Path, tuple[list[str], list[str]]]:
    """The tree, and runtime flags whose library is one object defining a symbol: linked twice,
    the link fails (duplicate definition); not at all, it fails too (undefined)."""
    for rel, text in {"Makefile": TOP, "src/Makefile": SRC, "src/lib/Makefile": LIB, "src/prog.c": PROG,
                      "src/lib/part.c": PART}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root.parent / "standin.c").write_text("int runtime_stand_in(void) { return 7; }\n")
    obj = root.parent / "standin.o"
    subprocess.run(["cc", "-c", str(root.parent / "standin.c"), "-o", str(obj)], check=True)
    return root, ([f"-I{RUNTIME_DIR / 'include'}"], [str(obj)])


@needs_toolchain
def test_the_runtimes_flags_reach_every_sub_make_once(tmp_path, capsys):
    tree, flags = _tree(tmp_path / "tree")
    report = check.run_check(tree, flags=flags, test='make -f Makefile -f "$RCLIFY_MK" test')
    assert report.ok, capsys.readouterr().out
    log = report.tests[0].log.read_text()
    assert "part 2 runtime 7" in log
    build = (tree / ".rclify/logs/build.log").read_text()
    include = f"-I{RUNTIME_DIR / 'include'}"
    assert f"-MM {include} prog.c" in build, build  # CPPFLAGS in the dependency step
    assert f"-O1 {include}".replace(" ", "") in build.replace(" ", ""), build  # after the override
    assert f"cc {include} -c part.c" in build.replace("  ", " "), build  # two levels down
    link = next(line for line in build.splitlines() if "-o prog" in line)
    assert link.count("standin.o") == 1, link


@needs_toolchain
def test_without_the_sub_make_fragment_the_same_tree_does_not_build(tmp_path):
    """The test above can fail: with the flags given to the top make alone (what check did before:
    flags.mk, without the MAKEFILES it exports), src/'s compile does not find rclify.h."""
    tree, flags = _tree(tmp_path / "tree")
    with pytest.raises(BuildError):
        check.run_check(tree, flags=flags, build='make -f Makefile -f "$RCLIFY_MK" MAKEFILES= -j"$RCLIFY_JOBS"',
                        test="true")
    assert "rclify.h: No such file or directory" in (tree / ".rclify/logs/build.log").read_text()


def test_a_command_substitution_is_no_tool_of_its_own():
    assert command_tools("x-$(echo a).log") == []
    assert command_tools("./runtest > log-$(date +%s).txt") == ["date"]
    assert command_tools("make test LOG=`mktemp` && prove t") == ["mktemp", "make", "prove"]
    assert command_tools("echo $((1 + 2)) \"a (b) c\" 'd (e)' && ./t.sh") == []
    assert command_tools("(cd t && prove -r .)") == ["prove"]


@needs_toolchain
def test_a_test_command_with_a_command_substitution_runs(tmp_path):
    tree, flags = _tree(tmp_path / "tree")
    report = check.run_check(tree, flags=flags, test="echo ran > x-$(echo a).log && cat x-a.log")
    assert report.ok and "ran" in report.tests[0].log.read_text()
