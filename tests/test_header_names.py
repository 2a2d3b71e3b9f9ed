"""The public runtime header keeps its names out of the program's way: every parameter, macro
parameter and inline function local of runtime/include/rclify.h (and the files it includes from
runtime/include/rclify/) is prefixed (rcl_p_*, rcl_l_*), so that a program's `#define n 0xe`
before the include (issue 35) breaks no rewritten file.

The hostile names are derived from the header's own tokens, not listed by hand: every identifier
of its text that is not a C keyword, not reserved (`__x`, `_X`), not the runtime's (rcl_*, RCL_*,
rclify*, RCLIFY_*), not a name of the system headers it includes (which a program cannot
#define either without breaking them), and not a member of the header's structs (members are
read by runtime/src; renaming them is left to a change of the runtime: the test checks that
they are exactly the structs' members, so no other name hides among them).
"""

import functools
import re
import subprocess
import sys
from pathlib import Path

import clang.cindex as ci
import pytest

from rclify import runtime_build
from rclify.ctext.tokens import tokenize

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "runtime" / "include"
HEADERS = [INCLUDE / "rclify.h", *sorted((INCLUDE / "rclify").iterdir())]

# the C language's keywords (C11 and GNU's spellings of them): no program can #define these
C_KEYWORDS = set("""auto break case char const continue default do double else enum extern float for goto
if inline int long register restrict return short signed sizeof static struct switch typedef union
unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn
_Static_assert _Thread_local asm typeof defined include ifdef ifndef endif undef error pragma elif
line""".split())
PREFIXED = re.compile(r"^(rcl_|RCL_|rclify|RCLIFY_|__|_[A-Z])")


def _header_identifiers() -> set[str]:
    names = set()
    for header in HEADERS:
        names |= {t.text for t in tokenize(header.read_text()) if t.kind == "ident"}
    return names


@functools.cache
def _system_identifiers() -> set[str]:
    """Every identifier the system headers rclify.h includes declare or use (preprocessed, with
    their macros kept)."""
    includes = [line for line in (INCLUDE / "rclify.h").read_text().splitlines()
                if re.match(r"\s*#\s*include\s*<", line)]
    names = set()
    for features in ([], ["-D_GNU_SOURCE"]):  # the header tests for glibc's _NP initialisers
        proc = subprocess.run(["gcc", "-E", "-dD", *features, "-x", "c", "-"], input="\n".join(includes) + "\n",
                              capture_output=True, text=True, check=True)
        names |= {t.text for t in tokenize(proc.stdout) if t.kind == "ident"}
    return names


@functools.cache
def _struct_members() -> set[str]:
    tu = ci.Index.create().parse(str(INCLUDE / "rclify.h"), args=["-x", "c", f"-I{INCLUDE}"])
    return {n.spelling for n in tu.cursor.walk_preorder()
            if n.kind == ci.CursorKind.FIELD_DECL and n.location.file is not None
            and Path(n.location.file.name).resolve().parent in (INCLUDE, INCLUDE / "rclify")}


def hostile_names() -> list[str]:
    system = _system_identifiers()
    return sorted(n for n in _header_identifiers()
                  if n not in C_KEYWORDS and not PREFIXED.match(n) and n not in system and n not in _struct_members())


def _prelude(names: list[str]) -> str:
    return "".join(f"#define {name} 0xe\n" for name in names)


def test_the_hostile_names_are_derived_from_the_header():
    names = hostile_names()
    # the names the header's declarations used before (issue 35: `n` of rcl_known_lock_ids)
    # are gone: a name left unprefixed would be among these and break a compile below
    assert "n" not in names and "ids" not in names and "ctx" not in names
    # what is left are the arguments of algorithms.def's lines, which rclify.h's RCL_ALGORITHM
    # pastes or drops: the test is not empty
    assert {"rcl", "mcs", "MCS"} <= set(names), names
    assert {"alg", "posix", "config", "id"} <= _struct_members()


@pytest.mark.parametrize("std", ["-std=gnu11", "-std=c99", "-std=c11"])
def test_header_compiles_under_hostile_defines(tmp_path, std):
    names = hostile_names() + [p for p in _every_parameter_name()]
    source = tmp_path / "hostile.c"
    source.write_text(_prelude(sorted(set(names))) + "#include <rclify.h>\n"
                      "int main(void) { return 0; }\n")
    proc = subprocess.run(["gcc", std, "-fsyntax-only", "-Wall", "-Werror", f"-I{INCLUDE}", str(source)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_header_compiles_under_hostile_defines_in_cxx(tmp_path):
    source = tmp_path / "hostile.cpp"
    source.write_text(_prelude(sorted(set(hostile_names() + _every_parameter_name())))
                      + "#include <rclify.h>\nint main() { return 0; }\n")
    proc = subprocess.run(["g++", "-fsyntax-only", "-Wall", "-Werror", f"-I{INCLUDE}", str(source)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_the_prelude_would_break_the_old_names(tmp_path):
    """The test can fail: the same prelude over a header whose declaration names its parameter
    `n` (the one issue 35 reports) does not compile."""
    source = tmp_path / "old.c"
    source.write_text("#define n 0xe\nvoid rcl_known_lock_ids(const char *const *ids, int n);\n")
    proc = subprocess.run(["gcc", "-fsyntax-only", str(source)], capture_output=True, text=True)
    assert proc.returncode != 0


def _every_parameter_name() -> list[str]:
    """The parameters' names without their prefix (`n` for rcl_p_n): the names they had, which a
    program's macros took."""
    names = set()
    for header in HEADERS:
        names |= {m.group(1) for m in re.finditer(r"\brcl_[pl]_(\w+)", header.read_text())}
    return sorted(n for n in names if n not in C_KEYWORDS and not PREFIXED.match(n)
                  and n not in _system_identifiers() and n not in _struct_members())


def test_rewritten_file_compiles_under_hostile_defines(tmp_path):
    """A file rclify transformed (its lock_config.h, the extracted section, the hybrid calls)
    compiles with every hostile name defined before anything else."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "main.c").write_text("""#include <pthread.h>
#include <stdio.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int count;
int bump(int k)
{
    pthread_mutex_lock(&m);
    count += k;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
    if (pthread_mutex_trylock(&m) == 0) {
        count++;
        pthread_mutex_unlock(&m);
    }
    return count;
}
int main(void) { printf("%d\\n", bump(2)); return 0; }
""")
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "-q", "-j", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "RCL_EXECUTE" in (tree / "main.c").read_text()
    # the program's own names (m, c, k) stay its own: defined away, its own code would break
    own = {t.text for t in tokenize((tree / "main.c").read_text()) if t.kind == "ident"}
    names = sorted(set(hostile_names() + _every_parameter_name()) - own)
    assert "n" in names and "ids" in names
    (tree / "hostile.h").write_text(_prelude(names))
    built = subprocess.run(["gcc", "-std=gnu11", "-fsyntax-only", "-Wall", "-Werror", "-include", "hostile.h",
                            *runtime_build.cflags(), "main.c"], cwd=tree, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
