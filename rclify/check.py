"""rclify check: build a program with its own build system against the runtime, then run its test
suite once per lock assignment (an RCLIFY_LOCKS value), and report a table.

Works on any tree: on an untransformed one the runtime is linked but unused, and RCLIFY_LOCKS
changes nothing (a useful baseline).  Data flows:

    plan (rclify.toml > detection, command-line overrides on top)
    -> build (once) -> test (once per assignment) -> table

Commands are shell commands run at the tree root.  They see the runtime's flags in the environment,
so the recorded commands stay valid on another machine:
    RCLIFY_CFLAGS  compiler flags (include path of rclify.h)
    RCLIFY_LIBS    link flags (librclify.a -pthread -ldl)
    RCLIFY_JOBS    parallel build jobs
    RCLIFY_MK      a makefile fragment appending the two above to CFLAGS / LDLIBS / LIBS (plain make)
"""

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from rclify import runtime_build
from rclify.errors import BuildError, ToolMissingError, UsageError
from rclify.lock_config import ALGORITHMS

CONFIG_FILE = "rclify.toml"
STATE_DIR = ".rclify"  # in the checked tree: logs, the makefile fragment, the runtime's fingerprint
RUNTIME_STAMP = "runtime.sha256"  # fingerprint of the runtime the tree was last built against
NO_OVERRIDE = "config"  # the --locks value meaning "lock_config.h as written"
DEFAULT_LOCKS = ["*=posix"]
DEFAULT_TIMEOUT = 1800.0

# Debian packages providing the tools a build or test suite commonly calls.
TOOL_PACKAGES = {
    "make": "make", "gcc": "gcc", "cc": "gcc", "c99": "gcc", "g++": "g++", "c++": "g++",
    "clang": "clang", "cmake": "cmake", "ctest": "cmake", "ninja": "ninja-build",
    "autoreconf": "autoconf", "autoconf": "autoconf", "autoheader": "autoconf",
    "automake": "automake", "aclocal": "automake", "libtoolize": "libtool", "libtool": "libtool",
    "pkg-config": "pkg-config", "perl": "perl", "prove": "perl", "python3": "python3",
    "bison": "bison", "flex": "flex", "m4": "m4", "git": "git", "bash": "bash",
}
# configure/compiler messages naming a missing library -> the Debian package that provides it.
LIBRARY_MESSAGES = [
    (re.compile(r"libevent is required|event\.h: No such file", re.I), "libevent-dev"),
    (re.compile(r"no acceptable C compiler found", re.I), "gcc"),
    (re.compile(r"sasl/sasl\.h: No such file", re.I), "libsasl2-dev"),
    (re.compile(r"openssl/ssl\.h: No such file", re.I), "libssl-dev"),
    (re.compile(r"seccomp\.h: No such file", re.I), "libseccomp-dev"),
]
_NOT_FOUND = re.compile(  # what sh, bash, make and env say when a program is not there
    r"^(?:/bin/|/usr/bin/)?(?:ba|da)?sh: (?:line )?\d+: (?P<tool>[\w.+-]+): (?:command )?not found\s*$"
    r"|^make(?:\[\d+\])?: (?P<maketool>[\w.+-]+): (?:No such file or directory|Command not found)\s*$"
    r"|^(?:/usr/bin/)?env: '?(?P<envtool>[\w.+-]+)'?: No such file or directory\s*$",
    re.M,
)


@dataclass
class Plan:
    """How to build and test one tree."""

    system: str  # autotools, cmake, make, custom
    build: str
    test: str
    origin: str  # where the choice came from: detected, rclify.toml, command line
    notes: list[str] = field(default_factory=list)
    # Run before the build when the runtime changed since the tree was last built: the program's
    # makefiles do not know its binaries depend on librclify.a, so they would not relink them.
    clean: str | None = None


@dataclass
class Counts:
    passed: int
    failed: int
    skipped: int
    source: str  # which output format they were read from: prove, automake, ctest, tap


@dataclass
class RunResult:
    name: str  # "build" or the lock assignment
    command: str
    rc: int | None  # None when killed on timeout
    timed_out: bool
    seconds: float
    log: Path
    counts: Counts | None = None

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.rc == 0 and (self.counts is None or self.counts.failed == 0)

    @property
    def status(self) -> str:
        if self.timed_out:
            return "TIMEOUT"
        return "PASS" if self.ok else "FAIL"


@dataclass
class Report:
    tree: Path
    plan: Plan
    build: RunResult
    tests: list[RunResult]

    @property
    def ok(self) -> bool:
        return self.build.ok and bool(self.tests) and all(t.ok for t in self.tests)


# ---------------------------------------------------------------------------------------- plan


def detect(tree: Path) -> Plan:
    """The tree's own build system: autotools, then CMake, then a plain Makefile."""
    notes = []
    configure_ac = next((tree / n for n in ("configure.ac", "configure.in") if (tree / n).is_file()), None)
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
                notes.append(f"{f.name} adds -Werror: any warning in (transformed) code fails the build")
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
    makefile = next((tree / n for n in ("GNUmakefile", "makefile", "Makefile") if (tree / n).is_file()), None)
    if makefile:
        make = f'make -f {makefile.name} -f "$RCLIFY_MK"'
        target = next((t for t in ("test", "check") if _has_target(makefile, t)), None)
        if target is None:
            raise UsageError(f"{makefile} has no 'test' or 'check' target: say how to run the tests with --test CMD")
        clean = f"{make} clean" if _has_target(makefile, "clean") else None
        return Plan("make", f'{make} -j"$RCLIFY_JOBS"', f"{make} {target}", "detected", notes, clean)
    raise UsageError(
        f"{tree}: no configure, configure.ac, CMakeLists.txt or Makefile found: give --build CMD and --test CMD"
    )


def _detected_clean(tree: Path, system: str | None) -> str | None:
    """The clean command detection gives, for an rclify.toml written before `clean` was recorded."""
    if system not in ("autotools", "cmake", "make"):
        return None
    try:
        detected = detect(tree)
    except UsageError:
        return None
    return detected.clean if detected.system == system else None


def _has_target(makefile: Path, target: str) -> bool:
    return re.search(rf"^{target}\s*::?(?!=)", makefile.read_text(errors="replace"), re.M) is not None


def read_config(tree: Path) -> dict:
    """The [check] table of rclify.toml ({} when there is none)."""
    path = tree / CONFIG_FILE
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
        base = detect(tree) if not (build and test) else Plan("custom", "", "", "command line")
    if build is None and test is None:
        return base
    return Plan(
        "custom" if build is not None else base.system,
        build if build is not None else base.build,
        test if test is not None else base.test,
        "command line",
        base.notes,
        base.clean if build is None else None,
    )


def write_config(tree: Path, plan: Plan) -> Path:
    """Records the plan in rclify.toml's [check] table; other tables in the file are kept."""
    path = tree / CONFIG_FILE
    old = path.read_text() if path.is_file() else ""
    kept = re.sub(r"(?ms)^\[check\][^\[]*", "", old).strip()
    section = (
        "[check]\n"
        "# Written by `rclify check`; edit freely.  Commands run at the tree root with RCLIFY_CFLAGS,\n"
        "# RCLIFY_LIBS, RCLIFY_JOBS and RCLIFY_MK in the environment.  `clean` runs before the build\n"
        "# when the runtime changed since the last one (so that the binaries are relinked).  Optional keys:\n"
        '# locks = ["*=posix", "*=rcl"]   timeout = 1800   clean = "make clean"\n'
        f"system = {json.dumps(plan.system)}\n"
        f"build = {json.dumps(plan.build)}\n"
        f"test = {json.dumps(plan.test)}\n"
    )
    if plan.clean:
        section += f"clean = {json.dumps(plan.clean)}\n"
    for key in ("locks", "timeout"):
        value = read_config(tree).get(key) if old else None
        if value is not None:
            section += f"{key} = {json.dumps(value)}\n"
    path.write_text((kept + "\n\n" if kept else "") + section)
    return path


def validate_locks(spec: str) -> str:
    """An RCLIFY_LOCKS value, checked as the runtime will (PATTERN=ALG[:SERVER[@CPU]],...)."""
    if spec == NO_OVERRIDE:
        return spec
    entries = [e.strip() for e in spec.split(",")]
    for entry in entries:
        pattern, eq, value = entry.rpartition("=")
        m = re.fullmatch(r"(?P<alg>\w+)(?::(?P<server>\d+)(?:@(?P<cpu>\d+))?)?", value)
        if not eq or not pattern or not m:
            raise UsageError(f"--locks {spec!r}: bad entry {entry!r}: expected PATTERN=ALG[:SERVER[@CPU]]")
        if m["alg"] not in ALGORITHMS:
            raise UsageError(f"--locks {spec!r}: unknown algorithm {m['alg']!r} (expected {', '.join(ALGORITHMS)})")
        if m["server"] and int(m["server"]) > 63:
            raise UsageError(f"--locks {spec!r}: server must be an integer from 0 to 63")
    return spec


# ------------------------------------------------------------------------------------- running


class Progress:
    """One line per step, each stamped with the time since the check started."""

    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.start = time.monotonic()

    def __call__(self, message: str) -> None:
        print(f"[{format_seconds(time.monotonic() - self.start):>7}] {message}", file=self.out, flush=True)


def format_seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def run_logged(
    name: str, command: str, cwd: Path, env: dict, log: Path, timeout: float, progress: Progress,
    heartbeat: float = 60.0,
) -> RunResult:
    """Runs a shell command in its own process group with all output to `log`.  On timeout (or
    Ctrl-C) the whole group is killed, servers a test suite started included."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    timed_out = False
    with open(log, "wb") as out:
        out.write(f"# rclify check: {name}\n# cwd: {cwd}\n# $ {command}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            ["bash", "-c", command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            next_beat = start + heartbeat
            while proc.poll() is None:
                now = time.monotonic()
                if now - start > timeout:
                    timed_out = True
                    break
                if now >= next_beat:
                    progress(f"  {name}: still running ({format_seconds(now - start)}): {_last_line(log)}")
                    next_beat = now + heartbeat
                time.sleep(0.2)
        finally:
            _kill_group(proc)
    seconds = time.monotonic() - start
    if timed_out:
        with open(log, "a") as out:
            out.write(f"\n# rclify check: killed after the {format_seconds(timeout)} timeout\n")
    return RunResult(name, command, None if timed_out else proc.returncode, timed_out, seconds, log)


def _kill_group(proc: subprocess.Popen) -> None:
    """Ends whatever is left of the command's process group (TERM, then KILL)."""
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            proc.poll()
            time.sleep(0.1)
        else:
            continue
        break
    proc.wait()


def _last_line(log: Path) -> str:
    with open(log, "rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
        lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines() if ln.strip()]
    return (lines[-1][:100] if lines else "(no output yet)")


# ------------------------------------------------------------------------------------- parsing


def prove_failures(text: str) -> list[tuple[str, int]]:
    """(file, failed subtests) for each file in prove's Test Summary Report; prove pads the names
    into a column: "t/chunked-extstore.t      (Wstat: 256 (exited 1) Tests: 413 Failed: 1)"."""
    return [(m[1], int(m[2])) for m in re.finditer(r"^(\S+)\s+\(Wstat: .*?Tests: \d+ Failed: (\d+)\)", text, re.M)]


def parse_counts(text: str) -> Counts | None:
    """Test counts from the output of prove, automake's harness, ctest or raw TAP (in that order)."""
    files = re.findall(r"^Files=(\d+), Tests=(\d+)", text, re.M)
    if files:
        total = sum(int(t) for _, t in files)
        failed_sub = 0
        failed_files = 0
        for _, failed in prove_failures(text):
            failed_sub += failed
            failed_files += failed == 0 and "Result: FAIL" in text  # died or bad plan
        skipped = len(re.findall(r"\.\.+ ?skipped:", text))
        return Counts(total - failed_sub, failed_sub + failed_files, skipped, "prove")
    automake = re.findall(r"^# (PASS|FAIL|SKIP|XFAIL|XPASS|ERROR):\s+(\d+)", text, re.M)
    if automake:
        n = {k: 0 for k in ("PASS", "FAIL", "SKIP", "XFAIL", "XPASS", "ERROR")}
        for key, value in automake:
            n[key] += int(value)
        return Counts(n["PASS"] + n["XFAIL"], n["FAIL"] + n["XPASS"] + n["ERROR"], n["SKIP"], "automake")
    serial = re.findall(r"^(?:All (\d+) tests passed|(\d+) of (\d+) tests failed)", text, re.M)
    if serial:
        passed = failed = 0
        for all_passed, n_failed, n_total in serial:
            if all_passed:
                passed += int(all_passed)
            else:
                failed += int(n_failed)
                passed += int(n_total) - int(n_failed)
        skipped = sum(int(n) for n in re.findall(r"^\((\d+) tests? (?:was|were) not run\)", text, re.M))
        return Counts(passed, failed, skipped, "automake")
    ctest = re.findall(r"^\d+% tests passed, (\d+) tests? failed out of (\d+)", text, re.M)
    if ctest:
        failed = sum(int(f) for f, _ in ctest)
        total = sum(int(t) for _, t in ctest)
        skipped = len(re.findall(r"^\s+\d+ - .*\(Skipped\)\s*$", text, re.M))
        return Counts(total - failed - skipped, failed, skipped, "ctest")
    tap = re.findall(r"^(not )?ok\b[^\n#]*(#\s*skip)?", text, re.M | re.I)
    if tap:
        skipped = sum(1 for _, skip in tap if skip)
        failed = sum(1 for bad, skip in tap if bad and not skip)
        return Counts(len(tap) - skipped - failed, failed, skipped, "tap")
    return None


def missing_tool(text: str) -> ToolMissingError | None:
    """A ToolMissingError naming the Debian package, when the output says a tool or library is missing."""
    for m in _NOT_FOUND.finditer(text):
        tool = m["tool"] or m["maketool"] or m["envtool"]
        package = TOOL_PACKAGES.get(tool)
        if package:
            return ToolMissingError(f"'{tool}' is not installed: apt-get install {package}")
        return ToolMissingError(f"'{tool}' is not installed: install the Debian package that provides bin/{tool}")
    for pattern, package in LIBRARY_MESSAGES:
        if m := pattern.search(text):
            line = text[text.rfind("\n", 0, m.start()) + 1 : text.find("\n", m.end()) % (len(text) + 1)].strip()
            return ToolMissingError(f"the build needs a missing library ({line[:120]}): apt-get install {package}")
    return None


def command_tools(command: str) -> list[str]:
    """The programs a shell command starts: the first word of each simple command (best effort)."""
    tools = []
    for segment in re.split(r"&&|\|\||[;|()]", command):
        try:
            words = shlex.split(segment)
        except ValueError:
            continue
        while words and re.fullmatch(r"\w+=.*", words[0]):  # VAR=value prefixes
            words.pop(0)
        if words and "/" not in words[0] and "$" not in words[0] and words[0] not in _SHELL_WORDS:
            tools.append(words[0])
    return tools


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


# --------------------------------------------------------------------------------------- check


def run_check(
    tree: Path,
    build: str | None = None,
    test: str | None = None,
    locks: list[str] | None = None,
    timeout: float | None = None,
    jobs: int | None = None,
    flags: tuple[list[str], list[str]] | None = None,
    out=None,
    heartbeat: float = 60.0,
) -> Report:
    """Builds `tree` once, runs its tests once per lock assignment, prints progress and the table.
    `flags` (cflags, libs) replaces the runtime's own (tests use it to skip building the runtime)."""
    tree = Path(tree).resolve()
    if not tree.is_dir():
        raise UsageError(f"{tree} is not a directory")
    out = out or sys.stdout
    progress = Progress(out)
    plan = make_plan(tree, build, test)
    recorded = read_config(tree)
    locks = [validate_locks(s) for s in (locks or recorded.get("locks") or DEFAULT_LOCKS)]
    timeout = float(timeout or recorded.get("timeout") or DEFAULT_TIMEOUT)
    jobs = jobs or os.cpu_count() or 1
    require_tools(plan)
    if plan.origin != CONFIG_FILE:
        write_config(tree, plan)
    origin = {"detected": "detected", CONFIG_FILE: f"from {CONFIG_FILE}"}.get(plan.origin, f"from the {plan.origin}")
    recorded_note = "" if plan.origin == CONFIG_FILE else f", recorded in {CONFIG_FILE}"
    progress(f"check {tree}: {plan.system} build ({origin}{recorded_note})")
    for note in plan.notes:
        progress(f"note: {note}")
    if not _is_transformed(tree):
        progress("note: no lock_config.h in the tree: not transformed, so RCLIFY_LOCKS changes nothing here")

    if flags is None:
        progress("runtime: make -C runtime")
        runtime_build.build_runtime()
        flags = (runtime_build.cflags(), runtime_build.libs())
    state = tree / STATE_DIR
    logs = state / "logs"
    if logs.is_dir():
        for old in logs.glob("*.log"):
            old.unlink()
    env = _environment(flags, jobs, state)

    stamp, fingerprint = state / RUNTIME_STAMP, runtime_fingerprint(flags)
    if not stamp.is_file() or stamp.read_text().strip() != fingerprint:
        why = "first build by rclify check" if not stamp.is_file() else "the runtime changed since the last build"
        if plan.clean:
            progress(f"clean ({why}): {plan.clean}")
            cleaned = run_logged("clean", plan.clean, tree, env, logs / "clean.log", timeout, progress, heartbeat)
            if not cleaned.ok:
                _fail_build(cleaned, progress, out, plan)
        else:
            progress(f"warning: {why} and no clean command is known: binaries built before may not be "
                     f"relinked (add clean = \"...\" to {CONFIG_FILE})")
    stamp.unlink(missing_ok=True)  # written again only once a build against this runtime succeeds

    progress(f"build: {plan.build}")
    built = run_logged("build", plan.build, tree, env, logs / "build.log", timeout, progress, heartbeat)
    if not built.ok:
        _fail_build(built, progress, out, plan)
    stamp.write_text(fingerprint + "\n")

    progress(f"build: ok ({format_seconds(built.seconds)})")
    results = []
    for i, spec in enumerate(locks, 1):
        run_env = dict(env)
        if spec != NO_OVERRIDE:
            run_env["RCLIFY_LOCKS"] = spec
        shown = "no override (lock_config.h as written)" if spec == NO_OVERRIDE else f"RCLIFY_LOCKS='{spec}'"
        progress(f"test {i}/{len(locks)} {shown}: {plan.test}")
        log = logs / f"test-{i}-{_slug(spec)}.log"
        result = run_logged(spec, plan.test, tree, run_env, log, timeout, progress, heartbeat)
        text = log.read_text(errors="replace")
        result.counts = parse_counts(text)
        results.append(result)
        progress(f"test {i}/{len(locks)}: {_summary(result)}")
        if not result.ok:
            progress(f"  output kept in {log}")
            if result.rc is not None and (err := missing_tool(text)) is not None:
                print(format_table(Report(tree, plan, built, results)), file=out, flush=True)
                raise err
    report = Report(tree, plan, built, results)
    print(file=out)
    print(format_table(report), file=out, flush=True)
    failed = [r for r in results if not r.ok]
    if failed:
        print(f"\n{len(failed)} of {len(results)} test runs failed; logs:", file=out)
        for r in failed:
            print(f"  {r.name}: {r.log}", file=out)
    print(flush=True, file=out)
    return report


def runtime_fingerprint(flags: tuple[list[str], list[str]]) -> str:
    """sha256 over the flags and the content of every file they name (librclify.a)."""
    digest = hashlib.sha256()
    for arg in [*flags[0], "\0", *flags[1]]:
        digest.update(arg.encode() + b"\0")
        path = Path(arg)
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _environment(flags, jobs: int, state: Path) -> dict:
    cflags, libs = (" ".join(f) for f in flags)
    state.mkdir(parents=True, exist_ok=True)
    fragment = state / "flags.mk"
    fragment.write_text(
        "# rclify check: read after the program's own makefile (make -f Makefile -f this)\n"
        "CFLAGS += $(RCLIFY_CFLAGS)\nLDLIBS += $(RCLIFY_LIBS)\nLIBS += $(RCLIFY_LIBS)\n"
    )
    env = dict(os.environ)
    env.pop("RCLIFY_LOCKS", None)  # the build runs without an override; each test run sets its own
    env.update(RCLIFY_CFLAGS=cflags, RCLIFY_LIBS=libs, RCLIFY_JOBS=str(jobs), RCLIFY_MK=str(fragment))
    return env


def _fail_build(built: RunResult, progress: Progress, out, plan: Plan):
    why = f"timed out after {format_seconds(built.seconds)}" if built.timed_out else f"exit {built.rc}"
    progress(f"{built.name}: FAILED ({why}, {format_seconds(built.seconds)})")
    text = built.log.read_text(errors="replace")
    tail = [ln for ln in text.splitlines() if ln.strip()][-15:]
    print("  " + "\n  ".join(tail), file=out)
    print(file=out)
    print(format_table(Report(Path("."), plan, built, [])), file=out, flush=True)
    err = None if built.timed_out else missing_tool(text)
    if err is not None:
        raise ToolMissingError(f"{err} (build log: {built.log})")
    raise BuildError(f"the {built.name} failed ({why}); the tests were not run; log: {built.log}")


def _is_transformed(tree: Path) -> bool:
    return any(p for p in tree.rglob("lock_config.h") if STATE_DIR not in p.parts)


def _slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", spec.replace("*", "all")).strip("_") or "x"


def _summary(r: RunResult) -> str:
    counts = f"{r.counts.passed} passed, {r.counts.failed} failed, {r.counts.skipped} skipped ({r.counts.source})" \
        if r.counts else "no test counts in the output (exit code only)"
    why = "" if r.ok or r.timed_out else f" (exit {r.rc})"
    return f"{r.status}{why}: {counts} in {format_seconds(r.seconds)}"


def format_table(report: Report) -> str:
    """assignment x build x result x passed/failed/skipped x wall time."""
    header = ["assignment", "build", "tests", "passed", "failed", "skipped", "counted by", "wall"]
    rows = []
    build = "ok" if report.build.ok else ("TIMEOUT" if report.build.timed_out else "FAIL")
    for r in report.tests:
        c = r.counts
        rows.append([
            r.name, build, r.status,
            *(str(x) for x in ((c.passed, c.failed, c.skipped) if c else ("-", "-", "-"))),
            c.source if c else "exit code", format_seconds(r.seconds),
        ])
    if not report.tests:
        rows.append(["(none run)", build, "-", "-", "-", "-", "-", "-"])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    right = {3, 4, 5, 7}
    lines = [f"build: {build} in {format_seconds(report.build.seconds)} ({report.build.command})"]
    for row in [header, *rows]:
        lines.append("  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip())
    return "\n".join(lines)
