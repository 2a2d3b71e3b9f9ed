"""How to build and test a tree: rclify.toml, else detected from its build system (autotools,
CMake, a plain Makefile), with command-line overrides on top; and the tools those commands need."""

import re
import shlex
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from rclify import atomic_file, tree_paths

from rclify.errors import ToolMissingError, UsageError


CONFIG_FILE = "rclify.toml"


TOOL_PACKAGES = {
    "make": "make", "gcc": "gcc", "cc": "gcc", "c99": "gcc", "g++": "g++", "c++": "g++",
    "clang": "clang", "cmake": "cmake", "ctest": "cmake", "ninja": "ninja-build",
    "autoreconf": "autoconf", "autoconf": "autoconf", "autoheader": "autoconf",
    "automake": "automake", "aclocal": "automake", "libtoolize": "libtool", "libtool": "libtool",
    "pkg-config": "pkg-config", "perl": "perl", "prove": "perl", "python3": "python3",
    "bison": "bison", "flex": "flex", "m4": "m4", "git": "git", "bash": "bash",
}


@dataclass
class Plan:
    """How to build and test one tree."""

    system: str  # autotools, configure+make (a configure of its own), cmake, make, custom
    build: str
    test: str
    origin: str  # where the choice came from: detected, rclify.toml, command line
    notes: list[str] = field(default_factory=list)
    # Run before the build when the runtime changed since the tree was last built: the program's
    # makefiles do not know its binaries depend on librclify.o, so they would not relink them.
    clean: str | None = None


def detect(tree: Path, need_test: bool = True) -> Plan:
    """The tree's own build system: autotools, then CMake, then a plain Makefile.  need_test=False:
    the test command is given (--test), so a Makefile without a test target is no error."""
    notes = []
    configure_ac = next((tree / n for n in ("configure.ac", "configure.in") if (tree / n).is_file()), None)
    makefile = next((tree / n for n in ("GNUmakefile", "makefile", "Makefile") if (tree / n).is_file()), None)
    if (tree / "configure").is_file() and not configure_ac and makefile and not _autoconf_made(tree / "configure"):
        # a configure of the tree's own (fio's): it may refuse autoconf's VAR=value arguments; its
        # Makefile gets the flags as a plain make does
        make = f'make -f {makefile.name} -f "$RCLIFY_MK"'
        target = next((t for t in ("test", "check") if _has_target(makefile, t)), None if need_test else "")
        if target is None:
            raise UsageError(f"{makefile} has no 'test' or 'check' target: say how to run the tests with --test CMD")
        notes.append("configure is the tree's own (not autoconf's): run as ./configure, the flags given to make")
        clean = f"{make} clean" if _has_target(makefile, "clean") else None
        return Plan("configure+make", f'./configure && {make} -j"$RCLIFY_JOBS"', f"{make} {target}", "detected",
                    notes, clean)
    if (tree / "configure").is_file() or configure_ac:
        prefix = ""
        if not (tree / "configure").is_file():
            prefix = "./autogen.sh && " if (tree / "autogen.sh").is_file() else "autoreconf -fi && "
        build = (
            prefix + './configure CFLAGS="-g -O2 $RCLIFY_CFLAGS" LIBS="$RCLIFY_LIBS" && make -j"$RCLIFY_JOBS"'
        )
        makefile_am = next((tree / n for n in ("Makefile.am", "Makefile.in") if (tree / n).is_file()), None)
        target = "test" if makefile_am and _has_target(makefile_am, "test") else "check"
        for f in (configure_ac, tree / "configure"):
            if f and f.is_file() and "-Werror" in f.read_text(errors="replace"):
                # a mention, not proof: xz and lbzip2 use it only in probes or behind --enable-werror
                notes.append(f"{f.name} mentions -Werror: where the build turns it on, any warning in "
                             "(transformed) code fails the build")
                break
        return Plan("autotools", build, f"make {target}", "detected", notes, "[ ! -f Makefile ] || make clean")
    if (tree / "CMakeLists.txt").is_file():
        build = (
            'cmake -S . -B build-rclify -DCMAKE_C_FLAGS="$RCLIFY_CFLAGS" -DCMAKE_CXX_FLAGS="$RCLIFY_CFLAGS"'
            ' -DCMAKE_C_STANDARD_LIBRARIES="$RCLIFY_LIBS" -DCMAKE_CXX_STANDARD_LIBRARIES="$RCLIFY_LIBS"'
            ' && cmake --build build-rclify -j "$RCLIFY_JOBS"'
        )
        clean = "[ ! -d build-rclify ] || cmake --build build-rclify --target clean"
        return Plan("cmake", build, "ctest --test-dir build-rclify --output-on-failure", "detected", notes, clean)
    if makefile:
        make = f'make -f {makefile.name} -f "$RCLIFY_MK"'
        target = next((t for t in ("test", "check") if _has_target(makefile, t)), None if need_test else "")
        if target is None:
            raise UsageError(f"{makefile} has no 'test' or 'check' target: say how to run the tests with --test CMD")
        clean = f"{make} clean" if _has_target(makefile, "clean") else None
        return Plan("make", f'{make} -j"$RCLIFY_JOBS"', f"{make} {target}", "detected", notes, clean)
    raise UsageError(
        f"{tree}: no configure, configure.ac, CMakeLists.txt or Makefile found: give --build CMD and --test CMD"
    )


# What makes automake's `make check` run a test: a TESTS list (check-TESTS), DejaGnu, a check-local
# rule of the tree's own; an automake-made Makefile.in has them as rules (every one has check: and
# check-am:, which build the check programs), a Makefile.am as variables and rules
_RUNS_TESTS_IN = re.compile(r"^(?:check-TESTS|check-DEJAGNU|check-local)\s*:[^=]", re.M)
_RUNS_TESTS_AM = re.compile(r"^\s*(?:TESTS|XFAIL_TESTS)\s*\+?=|^check(?:-local)?\s*:[^=]|\bdejagnu\b", re.M)


def automake_runs_no_test(tree: Path, test: str) -> str:
    """Why `make check` runs no test in this automake tree, or "" when it may run one, or the
    command is another: no Makefile.in that automake made has a rule that runs tests and no other
    (a template configure fills in: apr's, libusb's doc/) has a check rule; or, before automake
    ran, no Makefile.am lists TESTS or a check rule.  libusb's builds its test programs as
    noinst_PROGRAMS and runs none, so a check that went by the exit status alone would say PASS."""
    if _words(test) != ["make", "check"]:
        return ""
    made = [p.read_text(errors="replace") for p in tree.rglob("Makefile.in") if ".rclify" not in p.parts]
    if made:
        if any(_RUNS_TESTS_IN.search(t) if t.startswith("# Makefile.in generated by automake")
               else _has_rule(t, "check") for t in made):  # a template's own check rule
            return ""
    else:
        written = [p for p in tree.rglob("Makefile.am") if ".rclify" not in p.parts]
        if not written or any(_RUNS_TESTS_AM.search(p.read_text(errors="replace")) for p in written):
            return ""
    return ("no Makefile.am of the tree lists TESTS or has a check-local rule: "
            "it builds the test programs and runs none")


def _detected_clean(tree: Path, system: str | None) -> str | None:
    """The clean command detection gives, for an rclify.toml written before `clean` was recorded."""
    if system not in ("autotools", "cmake", "make", "configure+make"):
        return None
    try:
        detected = detect(tree)
    except UsageError:
        return None
    return detected.clean if detected.system == system else None


def _autoconf_made(configure: Path) -> bool:
    with configure.open(errors="replace") as f:
        return "Generated by GNU Autoconf" in f.read(4096)


def _has_target(makefile: Path, target: str) -> bool:
    return _has_rule(makefile.read_text(errors="replace"), target)


def _has_rule(text: str, target: str) -> bool:
    return re.search(rf"^{target}\s*::?(?!=)", text, re.M) is not None


def read_config(tree: Path) -> dict:
    """The [check] table of rclify.toml ({} when there is none)."""
    path = tree_paths.file_in(tree, tree / CONFIG_FILE, CONFIG_FILE)  # no link: write_config replaces it
    if not path.is_file():
        return {}
    try:
        table = tomllib.loads(path.read_text()).get("check", {})
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"{path}: {err}") from None
    keys = (("build", str), ("test", str), ("clean", str), ("system", str), ("locks", list), ("timeout", (int, float)))
    for key, kind in keys:
        if key in table and not isinstance(table[key], kind):
            raise UsageError(f"{path}: [check] {key} has the wrong type")
    return table


def make_plan(tree: Path, build: str | None = None, test: str | None = None) -> Plan:
    """Command line over rclify.toml over detection, field by field."""
    recorded = read_config(tree)
    if recorded.get("build") and recorded.get("test"):
        base = Plan(recorded.get("system", "custom"), recorded["build"], recorded["test"], CONFIG_FILE,
                    clean=recorded.get("clean") or _detected_clean(tree, recorded.get("system")))
    else:
        base = detect(tree, need_test=test is None) if not (build and test) else Plan("custom", "", "", "command line")
    if build is None and test is None:
        return base
    notes, clean = list(base.notes), base.clean
    if build is not None:
        clean, why = _clean_for_build(tree, build, recorded)
        notes += [why] if why else []
    return Plan(
        "custom" if build is not None else base.system,
        build if build is not None else base.build,
        test if test is not None else base.test,
        "command line",
        notes,
        clean,
    )


def _clean_for_build(tree: Path, build: str, recorded: dict) -> tuple[str | None, str]:
    """The clean command for a build command given with --build, and a note when the detected one
    was left out or changed: the one rclify.toml records for that same build command; else the
    one detected for the tree's build system (autotools, CMake, make), unless it plainly does not
    apply to that command (it builds in another directory, or does not run make)."""
    if recorded.get("clean") and recorded.get("build") == build:
        return recorded["clean"], ""
    try:
        detected = detect(tree)
    except UsageError:
        return None, ""
    if detected.clean is None:
        return None, ""
    words = _words(build)
    if detected.system == "cmake":
        dirs = {d for d in _cmake_build_dirs(words)}
        if dirs == {"build-rclify"}:
            return detected.clean, ""
        if len(dirs) == 1:
            (d,) = dirs
            clean = f"[ ! -d {shlex.quote(d)} ] || cmake --build {shlex.quote(d)} --target clean"
            return clean, (f"--build builds in {d}, not in build-rclify (the detected CMake build directory): "
                           f"clean with `{clean}`")
        return None, ("--build does not build in build-rclify (the detected CMake build directory) and names no "
                      "single build directory (-B DIR, --build DIR): no clean command is known (add clean = \"...\" "
                      f"to {CONFIG_FILE})")
    elsewhere = _other_directory(words)
    if elsewhere:
        return None, (f"--build builds in {elsewhere}: the detected clean command ({detected.clean}) cleans the "
                      f"tree's root only, left out (add clean = \"...\" to {CONFIG_FILE})")
    if "make" not in command_tools(build):
        return None, (f"--build does not run make: the detected clean command ({detected.clean}) may not remove "
                      f"what it builds, left out (add clean = \"...\" to {CONFIG_FILE})")
    return detected.clean, ""


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _cmake_build_dirs(words: list[str]) -> list[str]:
    """The build directories a command's cmake invocations name (-B DIR, -BDIR, --build DIR)."""
    out = []
    for i, word in enumerate(words):
        if word in ("-B", "--build") and i + 1 < len(words) and not words[i + 1].startswith("-"):
            out.append(words[i + 1])
        elif word.startswith("-B") and len(word) > 2:
            out.append(word[2:])
    return [d.rstrip("/") or d for d in out]


def _other_directory(words: list[str]) -> str:
    """The directory other than the root a command builds in (`cd DIR`, `make -C DIR`), or ''."""
    for i, word in enumerate(words[:-1]):
        if word == "cd" or (word == "-C" and i > 0 and "make" in words[:i]):
            target = words[i + 1].rstrip("/")
            if target not in (".", "", "$PWD", "\"$PWD\""):
                return target
    return ""


def write_config(tree: Path, plan: Plan) -> Path:
    """Records the plan in rclify.toml's [check] table, written with a TOML library (tomli-w) so
    that any command text round-trips; other tables' values are kept (their comments are not: the
    file is parsed and written again)."""
    path = tree_paths.file_in(tree, tree / CONFIG_FILE, CONFIG_FILE)
    document = {}
    if path.is_file():
        try:
            document = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as err:
            raise UsageError(f"{path}: {err}") from None
    previous = document.get("check", {}) if isinstance(document.get("check"), dict) else {}
    table = {"system": plan.system, "build": plan.build, "test": plan.test}
    if plan.clean:
        table["clean"] = plan.clean
    for key in ("locks", "timeout"):
        if previous.get(key) is not None:
            table[key] = previous[key]
    document["check"] = table  # in its place, or after the other tables
    header = (
        "# The check table: written by `rclify check`; edit freely.  Commands run at the tree root with RCLIFY_CFLAGS,\n"
        "# RCLIFY_LIBS, RCLIFY_JOBS and RCLIFY_MK in the environment.  `clean` runs before the build\n"
        "# when the runtime changed since the last one (so that the binaries are relinked).  Optional keys:\n"
        '# locks = ["*=posix", "*=rcl"]   timeout = 1800   clean = "make clean"\n'
    )
    atomic_file.write_text(path, header + tomli_w.dumps(document))
    return path


def command_tools(command: str) -> list[str]:
    """The programs a shell command starts: the first word of each simple command, those of its
    command substitutions ($(...), `...`) included, which are no command of their own outside
    (`x-$(echo a).log` is one word) (best effort)."""
    outer, inner = _substitutions(command)
    tools = [tool for sub in inner for tool in command_tools(sub)]
    for segment in re.split(r"&&|\|\||[;|()]", outer):
        try:
            words = shlex.split(segment)
        except ValueError:
            continue
        while words and re.fullmatch(r"\w+=.*", words[0]):  # VAR=value prefixes
            words.pop(0)
        if words and "/" not in words[0] and "$" not in words[0] and words[0] not in _SHELL_WORDS:
            tools.append(words[0])
    return tools


def _substitutions(command: str) -> tuple[str, list[str]]:
    """command with each command substitution ($(...), `...`) and arithmetic expansion ($((...)))
    replaced by the word `$_`, and the commands those substitutions run (nested ones inside them);
    the shell's operators inside quotes made plain characters (`echo "a (b)"` starts no `b`)."""
    outer, inner, i, quote = [], [], 0, ""
    while i < len(command):
        char = command[i]
        if command.startswith("$(", i) and quote != "'":
            depth, j = 0, i + 1
            while j < len(command):
                depth += (command[j] == "(") - (command[j] == ")")
                if depth == 0:
                    break
                j += 1
            if not command.startswith("$((", i):
                inner.append(command[i + 2:j])
            outer.append("$_")
            i = j + 1
            continue
        if char == "`" and quote != "'":
            j = command.find("`", i + 1)
            j = len(command) if j < 0 else j
            inner.append(command[i + 1:j])
            outer.append("$_")
            i = j + 1
            continue
        if char in "'\"" and quote in ("", char):
            quote = "" if quote else char
        outer.append("_" if quote and char in "();|&" else char)
        i += 1
    return "".join(outer), inner


_SHELL_WORDS = {"cd", "test", "[", "true", "false", "echo", "exit", "export", "set", "if", "then", "else",
                "fi", "for", "do", "done", "while", "exec", "env", "timeout", "nice", "!", "{", "}", "."}


def require_tools(plan: Plan) -> None:
    for tool in command_tools(plan.build) + command_tools(plan.test):
        if shutil.which(tool) is None:
            package = TOOL_PACKAGES.get(tool)
            how = f"apt-get install {package}" if package else f"install the Debian package providing bin/{tool}"
            raise ToolMissingError(f"{plan.system} build of this tree needs '{tool}': {how}")
    if plan.system in ("autotools", "make", "cmake") and not (shutil.which("cc") or shutil.which("gcc")):
        raise ToolMissingError("no C compiler: apt-get install gcc")
