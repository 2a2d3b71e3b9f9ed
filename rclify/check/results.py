"""What a build or test run gave: exit status, test counts read from the suite's own output
(prove, automake's harness, ctest, raw TAP), a missing tool or library named, and the table."""

import re
from dataclasses import dataclass
from pathlib import Path

from rclify.check.plan import TOOL_PACKAGES, Plan
from rclify.errors import BuildError, ToolMissingError
from rclify.progress import format_seconds


LIBRARY_MESSAGES = [
    (re.compile(r"libevent is required|event\.h: No such file", re.I), "libevent-dev"),
    (re.compile(r"no acceptable C compiler found", re.I), "gcc"),
    (re.compile(r"sasl/sasl\.h: No such file", re.I), "libsasl2-dev"),
    (re.compile(r"openssl/ssl\.h: No such file", re.I), "libssl-dev"),
    (re.compile(r"seccomp\.h: No such file", re.I), "libseccomp-dev"),
]


_NOT_FOUND = re.compile(  # what sh, bash, make and env say when a program is not there
    # sh itself, or a script it runs (`./autogen.sh: 58: libtoolize: not found`, libuv)
    r"^(?:(?:/bin/|/usr/bin/)?(?:ba|da)?sh|[\w./+-]+\.sh): (?:line )?\d+: (?P<tool>[\w.+-]+): (?:command )?not found\s*$"
    r"|^make(?:\[\d+\])?: (?P<maketool>[\w.+-]+): (?:No such file or directory|Command not found)\s*$"
    r"|^(?:/usr/bin/)?env: '?(?P<envtool>[\w.+-]+)'?: No such file or directory\s*$",
    re.M,
)


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
    runs_no_test: str = ""  # why the command runs no test, when that is known (plan.automake_runs_no_test)

    @property
    def no_test_ran(self) -> bool:
        """It exited 0 having run no test (no counts in its output, and the tree lists none)."""
        return bool(self.runs_no_test) and not self.timed_out and self.rc == 0 and self.counts is None

    @property
    def ok(self) -> bool:
        return (not self.timed_out and self.rc == 0 and (self.counts is None or self.counts.failed == 0)
                and not self.no_test_ran)

    @property
    def status(self) -> str:
        if self.timed_out:
            return "TIMEOUT"
        if self.no_test_ran:
            return "NO TESTS"
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

    def to_json(self) -> dict:
        """`rclify check --json F`: the plan, the build and each test run, as the table shows them."""
        def run(r: RunResult) -> dict:
            counts = None if r.counts is None else {"passed": r.counts.passed, "failed": r.counts.failed,
                                                    "skipped": r.counts.skipped, "source": r.counts.source}
            return {"name": r.name, "command": r.command, "status": r.status, "exit_code": r.rc,
                    "timed_out": r.timed_out, "seconds": round(r.seconds, 3), "counts": counts, "log": str(r.log),
                    "runs_no_test": r.runs_no_test}
        plan = self.plan
        return {"tree": str(self.tree), "ok": self.ok,
                "plan": {"system": plan.system, "build": plan.build, "test": plan.test, "clean": plan.clean,
                         "origin": plan.origin, "notes": list(plan.notes)},
                "build": run(self.build), "tests": [run(t) for t in self.tests]}


def prove_failures(text: str) -> list[tuple[str, int]]:
    """(file, failed subtests) for each file in prove's Test Summary Report; prove pads the names
    into a column: "t/chunked-extstore.t      (Wstat: 256 (exited 1) Tests: 413 Failed: 1)"."""
    return [(m[1], int(m[2])) for m in re.finditer(r"^(\S+)\s+\(Wstat: .*?Tests: \d+ Failed: (\d+)\)", text, re.M)]


def parse_counts(text: str) -> Counts | None:
    """Test counts from the output of prove, automake's harness, ctest, cram or raw TAP (in that order)."""
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
    cram = re.findall(r"^# Ran (\d+) tests?, (\d+) skipped, (\d+) failed\.", text, re.M)
    if cram:  # the_silver_searcher's cram tests
        ran, skipped, failed = (sum(int(c[i]) for c in cram) for i in range(3))
        return Counts(ran - skipped - failed, failed, skipped, "cram")
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


_UNDEFINED_RUNTIME = re.compile(  # GNU ld, gold: undefined reference to `rcl_x'; lld: undefined symbol: rcl_x
    r"undefined (?:reference to|symbol:) [`'\u2018\"]?(?P<sym>(?:rcl|rclify)_\w+)"
)


def runtime_not_linked(text: str, log: Path | None = None) -> BuildError | None:
    """A BuildError saying where the runtime's libraries must go, when the link failed on
    undefined references to the runtime's functions (rcl_*): the build compiled transformed code
    but its link line lacks librclify, typically a Makefile rule with a hard-coded `-lpthread`."""
    symbols = sorted(set(m["sym"] for m in _UNDEFINED_RUNTIME.finditer(text)))
    if not symbols:
        return None
    shown = ", ".join(symbols[:3]) + (f" and {len(symbols) - 3} more" if len(symbols) > 3 else "")
    where = f"; build log: {log}" if log else ""
    return BuildError(
        f"the link failed on undefined references to the rclify runtime ({shown}): the link line lacks "
        "its libraries: use $(LDLIBS) or $(LIBS) there, anywhere on the line (rclify check appends "
        "$RCLIFY_LIBS to both); a rule with a hard-coded -lpthread needs one of them, or the output of "
        f"`rclify flags --libs`{where}"
    )


def summary_line(r: RunResult) -> str:
    if r.no_test_ran:
        return f"{r.status}: {r.runs_no_test}; give the command that runs the tests with --test CMD"
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
