"""Profiles: running an unmodified program under the preload profiler, and reading profile.json.

profile.json is written by two producers with one schema (docs/profiling.md):
  - `rclify profile -- CMD` (source "preload"): runtime/profiler/preload.c writes raw records, which
    build_profile() turns into lock entries named by allocation site;
  - a transformed program run with RCLIFY_LOCKS='*=profile' (source "runtime"):
    runtime/src/pthread/profile.c writes the JSON itself, lock ids being lock_config.h ids.
load() reads either and checks it, so `rclify report` and `rclify assign` never meet a half-read file.
"""

import json
import mmap
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rclify import atomic_file, runtime_build
from rclify.profiling import symbols as syms
from rclify.profiling.format import FORMAT, VERSION, cs_time_pct, status_text
from rclify.profiling.preload_records import build_profile, parse_raw
from rclify.errors import RclifyError, UsageError

PROFILER_LIB = runtime_build.PROFILER_LIB


# ---- running a program ------------------------------------------------------------------------


def build_profiler() -> Path:
    """`make` of the preload library alone (the rest of the runtime may be mid-change)."""
    runtime_build.make("build/librclify_prof.so", "the profiler", PROFILER_LIB)
    return PROFILER_LIB


def find_program(name: str) -> Path:
    """The program to run, as the shell would find it; a clear error when it is not there."""
    if "/" in name:
        path = Path(name)
        if not path.exists():
            raise UsageError(f"{name}: program not found")
    else:
        found = shutil.which(name)
        if not found:
            raise UsageError(f"{name}: program not found (not a file, not on PATH)")
        path = Path(found)
    if path.is_dir() or not os.access(path, os.X_OK):
        raise UsageError(f"{name}: not an executable program")
    return path.resolve()


# A string of the runtime's own (runtime/src/pthread/profile.c reads this variable), in every
# program linked with its archive, stripped or not; the shared library's name in one linked with it.
RUNTIME_MARKS = (b"RCLIFY_PROFILE_OUT\0", b"librclify.so")


def check_interposable(program: Path, command: str = "profile") -> None:
    """What an LD_PRELOAD library (the profiler, or `rclify run`'s interposer: command) cannot do
    with program, said up front in one line instead of a run that measures or changes nothing: a
    statically linked program (no dynamic loader), a set-user-ID or set-group-ID one (the loader
    ignores LD_PRELOAD for it), a transformed one (its locks are the runtime's: the profiler would
    see the runtime's own mutexes, all at one site; RCLIFY_LOCKS chooses its algorithms)."""
    info = syms.read_elf(program)
    if info is None:
        return  # a script: its interpreter is dynamically linked, or the profile will say nothing
    tool = "the profiler" if command == "profile" else "rclify run"
    if info.interp is None:
        right = ("run it with RCLIFY_LOCKS='*=profile'" if command == "profile" else "use RCLIFY_LOCKS")
        raise UsageError(f"{program} is statically linked: {tool} (an LD_PRELOAD library) cannot reach its "
                         f"locks. Rebuild it dynamically, or transform it and {right}")
    st = program.stat()
    if st.st_mode & stat.S_ISUID and st.st_uid != os.getuid() or st.st_mode & stat.S_ISGID and st.st_gid != os.getgid():
        which = "set-user-ID" if st.st_mode & stat.S_ISUID else "set-group-ID"
        raise UsageError(f"{program} is {which}: the dynamic loader ignores LD_PRELOAD for it, so {tool} would not "
                         f"reach its locks; {command} a copy without that bit (cp {program} /tmp/)")
    if _links_the_runtime(program):
        right = (f"RCLIFY_LOCKS='*=profile' RCLIFY_PROFILE_OUT=profile.json {program.name} ARGS (its lock ids are "
                 "lock_config.h's; rclify report and assign read that file)" if command == "profile" else
                 f"RCLIFY_LOCKS='*=mcs' {program.name} ARGS, or its lock_config.h")
        raise UsageError(f"{program} is a transformed program (it links the rclify runtime): {tool} would see only "
                         f"the runtime's own mutexes, not its locks; run it so instead: {right}")


def _links_the_runtime(program: Path) -> bool:
    try:
        with open(program, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return any(data.find(mark) >= 0 for mark in RUNTIME_MARKS)

    except (OSError, ValueError):  # ValueError: an empty file
        return False



def run(command: list[str], interval_ms: int = 1000) -> dict:
    """Runs command under the profiler and returns the profile (a dict in the profile.json schema)."""
    if not command:
        raise UsageError("give the program to profile after `--`: rclify profile -- ./prog ARGS")
    program = find_program(command[0])
    check_interposable(program)
    lib = build_profiler()
    tmp = tempfile.mkdtemp(prefix="rclify-profile-")
    try:
        raw_prefix = Path(tmp) / "raw"
        env = dict(os.environ)
        env["LD_PRELOAD"] = " ".join(p for p in [str(lib), env.get("LD_PRELOAD", "")] if p)
        env["RCLIFY_PROF_OUT"] = str(raw_prefix)
        env["RCLIFY_PROF_INTERVAL_MS"] = str(interval_ms)
        started = time.monotonic_ns()
        interrupted = False
        try:
            proc = subprocess.Popen([str(program)] + command[1:], env=env)
        except OSError as err:
            raise UsageError(f"{command[0]}: cannot run: {err.strerror}") from None
        try:
            status = proc.wait()
        except KeyboardInterrupt:
            interrupted = True  # the program got the SIGINT too; give it time to write
            try:
                status = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                status = proc.wait()
        if not interrupted:
            interrupted = _wait_for_the_rest(raw_prefix, command[0])
        wall_ns = time.monotonic_ns() - started
        raws = sorted(Path(tmp).glob("raw.*[0-9]"), key=lambda p: p.stat().st_size, reverse=True)
        own = Path(f"{raw_prefix}.{proc.pid}")
        chosen = own if own.exists() else None
        if chosen is None or ("\nlock " not in chosen.read_text(errors="replace") and raws):
            # e.g. a shell script: the process that took locks (the largest such), else the largest
            chosen = next((r for r in raws if "\nlock " in r.read_text(errors="replace")), raws[0] if raws else None)

        if chosen is None:
            raise RclifyError(
                f"{command[0]} left no profile (exit status {status_text(status)}): it may not use pthreads, "
                "or it exited before the profiler started"
            )
        raw = parse_raw(chosen.read_text(errors="replace"))
    finally:  # a process still writing there (^C while waiting for it) must not make this fail
        shutil.rmtree(tmp, ignore_errors=True)
    profile = build_profile(raw, program, command[1:], status, wall_ns)
    if interrupted:
        profile["partial"] = True
        profile["partial_reason"] = "interrupted (Ctrl-C)"
    return profile


def _wait_for_the_rest(raw_prefix: Path, name: str) -> bool:
    """Waits for the processes the program started that still run with the profiler (a daemon, a
    server its script left running): their records are written at their exit.  Returns whether
    the wait was cut short (^C: what they wrote so far, their last snapshots, is kept)."""
    left = _profiled_processes(raw_prefix)
    if not left:
        return False
    print(f"rclify profile: {name} has exited, {len(left)} process(es) it started still run with the profiler "
          f"(pid {', '.join(map(str, left[:5]))}): waiting for them to end (^C: stop waiting, keep what they wrote "
          "so far)", file=sys.stderr, flush=True)
    try:
        while _profiled_processes(raw_prefix):
            time.sleep(0.2)
    except KeyboardInterrupt:
        return True
    return False


def _profiled_processes(raw_prefix: Path) -> list[int]:
    """The live processes whose environment carries this run's profiler (its RCLIFY_PROF_OUT)."""
    marker = b"\0RCLIFY_PROF_OUT=" + str(raw_prefix).encode() + b"\0"
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    environ = b"\0" + f.read()
            except OSError:
                continue
            if marker in environ:
                found.append(int(entry))
    return sorted(found)



# ---- reading profile.json ----------------------------------------------------------------------

_LOCK_FIELDS = {"id": str, "acquisitions": int, "contended": int, "wait_ns": int, "hold_ns": int}


def load(path: Path) -> dict:
    """A profile.json from either producer, checked; one clear line when it is not usable."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such profile") from None
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise UsageError(f"{path}: not a valid profile: not UTF-8 text (byte {err.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        cut = " (the file looks truncated)" if err.pos >= len(text.rstrip()) - 1 else ""
        raise UsageError(f"{path}: not a valid profile: malformed JSON at line {err.lineno}, column {err.colno}{cut}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f"{path}: not an rclify profile (no \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise UsageError(f"{path}: profile version {data.get('version')!r}; this rclify reads version {VERSION}")
    locks = data.get("locks")
    if not isinstance(locks, list):
        raise UsageError(f"{path}: not a valid profile: \"locks\" is missing or not a list")
    total = data.get("total_thread_ns")
    if not isinstance(total, int) or total < 0:
        raise UsageError(f"{path}: not a valid profile: \"total_thread_ns\" is missing or not a count")
    for i, lock in enumerate(locks):
        for name, kind in _LOCK_FIELDS.items():
            if not isinstance(lock, dict) or not isinstance(lock.get(name), kind):
                raise UsageError(f"{path}: not a valid profile: lock #{i + 1} lacks a valid \"{name}\"")
        lock.setdefault("nested_in", [])
        lock.setdefault("elements", None)
        lock.setdefault("cache_misses_per_cs", None)
        lock["cs_time_pct"] = cs_time_pct(lock, total)  # recomputed: both producers agree by construction
    locks.sort(key=lambda l: (-l["cs_time_pct"], l["id"]))
    data.setdefault("partial", False)
    data["path"] = str(path)
    return data


def save(profile: dict, path: Path) -> None:
    atomic_file.write_text(path, json.dumps(profile, indent=2) + "\n")
