"""rclify check: build a program with its own build system against the runtime, then run its test
suite once per lock assignment (an RCLIFY_LOCKS value), and report a table.

Works on any tree: on an untransformed one the runtime is linked but unused, and RCLIFY_LOCKS
changes nothing (a useful baseline).  Data flows:

    plan (rclify.toml > detection, command-line overrides on top)
    -> build (once) -> test (once per assignment) -> table

Commands are shell commands run at the tree root.  They see the runtime's flags in the environment,
so the recorded commands stay valid on another machine:
    RCLIFY_CFLAGS  compiler flags (include path of rclify.h)
    RCLIFY_LIBS    link flags (librclify.o -pthread -ldl)
    RCLIFY_JOBS    parallel build jobs
    RCLIFY_MK      a makefile fragment appending the two above to CFLAGS / LDLIBS / LIBS (plain make)
"""

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from rclify import runtime_build, tree_paths

from rclify.check.plan import (CONFIG_FILE, Plan, automake_runs_no_test, make_plan, read_config, require_tools,
                               write_config)
from rclify.check.results import (Report, RunResult, format_table, missing_tool, parse_counts, runtime_not_linked,
                                  summary_line)
from rclify.errors import BuildError, ToolMissingError, UsageError
from rclify.lock_config import NO_OVERRIDE, validate_override
from rclify.progress import INTERVAL_S, Progress, format_seconds, step


STATE_DIR = ".rclify"  # in the checked tree: logs, the makefile fragment, the runtime's fingerprint


RUNTIME_STAMP = "runtime.sha256"  # fingerprint of the runtime the tree was last built against




DEFAULT_LOCKS = ["*=posix"]


DEFAULT_TIMEOUT = 1800.0


def run_logged(
    name: str, command: str, cwd: Path, env: dict, log: Path, timeout: float, progress: Progress,
    heartbeat: float = INTERVAL_S,
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


def run_check(
    tree: Path,
    build: str | None = None,
    test: str | None = None,
    locks: list[str] | None = None,
    timeout: float | None = None,
    jobs: int | None = None,
    flags: tuple[list[str], list[str]] | None = None,
    out=None,
    heartbeat: float = INTERVAL_S,
) -> Report:
    """Builds `tree` once, runs its tests once per lock assignment, prints progress and the table.
    `flags` (cflags, libs) replaces the runtime's own (tests use it to skip building the runtime)."""
    tree = Path(tree).resolve()
    if not tree.is_dir():
        raise UsageError(f"{tree} is not a directory")
    tree_paths.state_dir(tree, STATE_DIR)  # logs, flags.mk, the stamp: in the tree, through no link
    out = out or sys.stdout
    progress = Progress(out=out)
    plan = make_plan(tree, build, test)
    recorded = read_config(tree)
    locks = [validate_override(s) for s in (locks or recorded.get("locks") or DEFAULT_LOCKS)]
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
        with step(progress, "runtime: make -C runtime"):
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
    results = _run_tests(tree, plan, built, locks, env, logs, timeout, progress, heartbeat, out)
    report = Report(tree, plan, built, results)
    print(file=out)
    print(format_table(report), file=out, flush=True)
    if any(r.no_test_ran for r in results):
        print(f"\n`{plan.test}` ran no test: {results[0].runs_no_test}; give the command that runs the tests "
              f"with --test CMD (it is recorded in {CONFIG_FILE})", file=out)
    failed = [r for r in results if not r.ok and not r.no_test_ran]
    if failed:
        print(f"\n{len(failed)} of {len(results)} test runs failed; logs:", file=out)
        for r in failed:
            print(f"  {r.name}: {r.log}", file=out)
    print(flush=True, file=out)
    return report


def _run_tests(tree: Path, plan: Plan, built: RunResult, locks: list[str], env: dict, logs: Path,
               timeout: float, progress: Progress, heartbeat: float, out) -> list[RunResult]:
    """The test command once per lock assignment; stops at a tool the suite needs and lacks."""
    results = []
    runs_no_test = automake_runs_no_test(tree, plan.test)
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
        result.runs_no_test = runs_no_test
        results.append(result)
        progress(f"test {i}/{len(locks)}: {summary_line(result)}")
        if not result.ok:
            progress(f"  output kept in {log}")
            if result.rc is not None and (err := missing_tool(text) or runtime_not_linked(text, log)) is not None:
                print(format_table(Report(tree, plan, built, results)), file=out, flush=True)
                raise err
    return results


def runtime_fingerprint(flags: tuple[list[str], list[str]]) -> str:
    """sha256 over the flags and the content of every file they name (librclify.o)."""
    digest = hashlib.sha256()
    for arg in [*flags[0], "\0", *flags[1]]:
        digest.update(arg.encode() + b"\0")
        path = Path(arg)
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


# The variables a makefile compiles and links with: the runtime's flags appended to each.
# CPPFLAGS too: a dependency step (`$(CC) -MM $(CPPFLAGS) *.c`) must find rclify.h as well.
_MAKE_VARIABLES = (("CFLAGS", "RCLIFY_CFLAGS"), ("CPPFLAGS", "RCLIFY_CFLAGS"), ("LDLIBS", "RCLIFY_LIBS"),
                   ("LIBS", "RCLIFY_LIBS"))


def _environment(flags, jobs: int, state: Path) -> dict:
    cflags, libs = (" ".join(f) for f in flags)
    state.mkdir(parents=True, exist_ok=True)
    fragment, submake = state / "flags.mk", state / "submake.mk"
    fragment.write_text(
        "# rclify check: read after the program's own makefile (make -f Makefile -f this); `override`\n"
        "# appends to a variable the makefile set with override too (fio: override CFLAGS := ...)\n"
        + "".join(f"override {var} += $({value})\n" for var, value in _MAKE_VARIABLES)
        + "# a sub-make (`cd src && $(MAKE)`) reads no -f of ours: each make reads MAKEFILES' files first\n"
        f"export MAKEFILES := {submake}\n"
    )
    submake.write_text(
        "# rclify check: read first by every sub-make of a build run with flags.mk (MAKEFILES).  Read\n"
        "# before the makefile, so appended per target, when its recipe runs (the makefile's own value\n"
        "# then set); private: not once more for each prerequisite (librclify.o twice does not link)\n"
        "ifneq ($(MAKELEVEL),0)\n"
        + "".join(f"%: private override {var} += $({value})\n" for var, value in _MAKE_VARIABLES)
        + "endif\n"
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
    if not built.timed_out and (unlinked := runtime_not_linked(text, built.log)) is not None:
        raise unlinked
    raise BuildError(f"the {built.name} failed ({why}); the tests were not run; log: {built.log}")


def _is_transformed(tree: Path) -> bool:
    return any(p for p in tree.rglob("lock_config.h") if STATE_DIR not in p.parts)


def _slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", spec.replace("*", "all")).strip("_") or "x"
