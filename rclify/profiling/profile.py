"""Profiles: running an unmodified program under the preload profiler, and reading profile.json.

profile.json is written by two producers with one schema (docs/profiling.md):
  - `rclify profile -- CMD` (source "preload"): runtime/profiler/preload.c writes raw records, which
    build_profile() turns into lock entries named by allocation site;
  - a transformed program run with RCLIFY_LOCKS='*=profile' (source "runtime"):
    runtime/src/alg_profile.c writes the JSON itself, lock ids being lock_config.h ids.
load() reads either and checks it, so `rclify report` and `rclify assign` never meet a half-read file.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from math import gcd
from pathlib import Path

from rclify import atomic_file
from rclify.profiling import symbols as syms
from rclify.errors import BuildError, RclifyError, ToolMissingError, UsageError
from rclify.paths import RUNTIME_DIR, require

FORMAT = "rclify-profile"
VERSION = 1
PROFILER_LIB = RUNTIME_DIR / "build" / "librclify_prof.so"
MUTEX_SIZE = 40  # sizeof(pthread_mutex_t) on x86-64/aarch64 glibc
CACHE_EVENTS = ["l1d", "llc"]  # L1D read misses, last-level-cache read misses


# ---- running a program ------------------------------------------------------------------------


def build_profiler() -> Path:
    """`make` of the preload library alone (the rest of the runtime may be mid-change)."""
    require(RUNTIME_DIR / "Makefile")
    if shutil.which("make") is None or shutil.which("gcc") is None:
        raise ToolMissingError("building the profiler needs make and gcc: apt-get install build-essential")
    proc = subprocess.run(
        ["make", "-C", str(RUNTIME_DIR), "build/librclify_prof.so"], capture_output=True, text=True
    )
    if proc.returncode != 0 or not PROFILER_LIB.exists():
        raise BuildError(f"building the profiler failed:\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
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


def check_interposable(program: Path) -> None:
    """LD_PRELOAD cannot reach a statically linked program's pthread calls: say so up front."""
    info = syms.read_elf(program)
    if info is None:
        return  # a script: its interpreter is dynamically linked, or the profile will say nothing
    if info.interp is None:
        raise UsageError(
            f"{program} is statically linked: the profiler (an LD_PRELOAD library) cannot intercept its "
            "locks. Rebuild it dynamically, or transform it and run it with RCLIFY_LOCKS='*=profile'"
        )


def run(command: list[str], interval_ms: int = 1000) -> dict:
    """Runs command under the profiler and returns the profile (a dict in the profile.json schema)."""
    if not command:
        raise UsageError("give the program to profile after `--`: rclify profile -- ./prog ARGS")
    program = find_program(command[0])
    check_interposable(program)
    lib = build_profiler()
    with tempfile.TemporaryDirectory(prefix="rclify-profile-") as tmp:
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
        wall_ns = time.monotonic_ns() - started
        raws = sorted(Path(tmp).glob("raw.*[0-9]"), key=lambda p: p.stat().st_size, reverse=True)
        own = Path(f"{raw_prefix}.{proc.pid}")
        chosen = own if own.exists() else None
        if chosen is None or ("\nlock " not in chosen.read_text(errors="replace") and raws):
            chosen = raws[0] if raws else None  # e.g. a shell script: the process that took locks
        if chosen is None:
            raise RclifyError(
                f"{command[0]} left no profile (exit status {_status_text(status)}): it may not use pthreads, "
                "or it exited before the profiler started"
            )
        raw = parse_raw(chosen.read_text(errors="replace"))
    profile = build_profile(raw, program, command[1:], status, wall_ns)
    if interrupted:
        profile["partial"] = True
        profile["partial_reason"] = "interrupted (Ctrl-C)"
    return profile


def _status_text(status: int) -> str:
    if status < 0:
        try:
            return signal.Signals(-status).name
        except ValueError:
            return f"signal {-status}"
    return str(status)


# ---- the raw file of the preload library --------------------------------------------------------


@dataclass
class RawLock:
    rec: int
    addr: int
    site: int
    kind: str  # "s" static, "i" pthread_mutex_init
    destroyed: bool
    acq: int
    contended: int
    wait_ns: int
    hold_ns: int
    cs_measured: int
    misses: list[int]
    nested: list[int]


@dataclass
class Raw:
    pid: int = 0
    exe: str = ""
    start_ns: int = 0
    now_ns: int = 0
    cache: str = "unavailable"
    threads: int = 0
    thread_ns: int = 0
    untracked: int = 0
    locks: list[RawLock] = field(default_factory=list)
    maps: list[str] = field(default_factory=list)
    end: str | None = None  # "exit", "signal N", "snapshot"; None when the file was cut short


def parse_raw(text: str) -> Raw:
    raw = Raw()
    in_maps = False
    for line in text.splitlines():
        if in_maps:
            if line == "maps-end":
                in_maps = False
            else:
                raw.maps.append(line)
            continue
        word, _, rest = line.partition(" ")
        try:
            if word == "pid":
                raw.pid = int(rest)
            elif word == "exe":
                raw.exe = rest
            elif word == "start_ns":
                raw.start_ns = int(rest)
            elif word == "now_ns":
                raw.now_ns = int(rest)
            elif word == "cache":
                raw.cache = rest
            elif word == "threads":
                raw.threads, raw.thread_ns = (int(x) for x in rest.split())
            elif word == "untracked":
                raw.untracked = int(rest)
            elif word == "lock":
                f = rest.split()
                nested = [] if f[12] == "-" else [int(x) for x in f[12].split(",")]
                raw.locks.append(
                    RawLock(int(f[0]), int(f[1], 16), int(f[2], 16), f[3], f[4] == "1",
                            *(int(x) for x in f[5:10]), [int(f[10]), int(f[11])], nested)
                )
            elif word == "maps-begin":
                in_maps = True
            elif word == "end":
                raw.end = rest
        except (ValueError, IndexError):
            break  # a line cut short: what came before stands
    return raw


# ---- from raw records to lock entries ----------------------------------------------------------


@dataclass
class _Group:
    lock_id: str
    name: str
    kind: str
    site: str | None = None
    expression: str | None = None
    symbol: str | None = None
    members: list[tuple[RawLock, str]] = field(default_factory=list)  # (record, element name)


def build_profile(raw: Raw, program: Path, args: list[str], status: int, wall_ns: int) -> dict:
    objects = syms.loaded_objects(raw.maps)
    exe = Path(raw.exe) if raw.exe else program
    main_obj = next((o for o in objects if Path(o.path) == exe), None)
    groups: dict[str, _Group] = {}
    group_of_rec: dict[int, str] = {}

    init_locks = [l for l in raw.locks if l.kind == "i"]
    sites = _resolve_sites({l.site for l in init_locks}, objects, main_obj)
    for lock in raw.locks:
        obj = syms.object_at(objects, lock.addr)
        var = _variable_at(obj, lock.addr, main_obj) if obj else None
        if lock.kind == "i":
            site_id, site_name, expression = sites[lock.site]
            group = groups.setdefault(site_id, _Group(site_id, site_name, "init", site=site_id, expression=expression))
            element = var[1] if var else f"heap {lock.addr:#x}"
        elif var:
            sym_id, element, sym = var
            group = groups.setdefault(sym_id, _Group(sym_id, sym_id, "static", symbol=sym.name))
        else:
            anon = f"anonymous@{lock.addr:#x}"
            group = groups.setdefault(anon, _Group(anon, f"lock at {lock.addr:#x}, no init call, no symbol", "static"))
            element = anon
        group.members.append((lock, element))
        group_of_rec[lock.rec] = group.lock_id

    _name_array_elements(groups.values())
    total = raw.thread_ns
    cache_ok = raw.cache == "available"
    locks = [_lock_entry(g, group_of_rec, total, cache_ok) for g in groups.values()]
    locks.sort(key=lambda l: (-l["cs_time_pct"], l["id"]))

    partial_reason = None
    if status < 0:
        partial_reason = f"the program was killed by {_status_text(status)}"
    elif raw.end != "exit":
        partial_reason = "the program ended without running its exit handlers (_exit, exec, or a kill)"
    return {
        "format": FORMAT,
        "version": VERSION,
        "source": "preload",
        "program": str(program),
        "args": list(args),
        "profiled_process": raw.exe or str(program),
        "pid": raw.pid,
        "exit_status": _status_text(status),
        "partial": partial_reason is not None,
        "partial_reason": partial_reason,
        "threads": raw.threads,
        "wall_ns": wall_ns,
        "total_thread_ns": total,
        "cache_counters": {"events": CACHE_EVENTS} if cache_ok else _unavailable(raw.cache),
        "untracked_acquisitions": raw.untracked,
        "locks": locks,
    }


def _unavailable(cache: str) -> str:
    why = cache.removeprefix("unavailable").strip() or "no reason given"
    return f"unavailable on this machine ({why})"


def _variable_at(obj: syms.LoadedObject, addr: int, main_obj) -> tuple[str, str, syms.Symbol] | None:
    """(group id, element name, symbol) of the data symbol holding the lock at addr."""
    sym = syms.symbols(obj.path).data_at(addr - obj.bias)
    if not sym:
        return None
    prefix = f"{Path(sym.file).name}:" if sym.file else ("" if obj is main_obj else f"{obj.name}:")
    offset = addr - obj.bias - sym.value
    element = sym.name if offset == 0 and sym.size <= MUTEX_SIZE else f"{sym.name}+{offset:#x}"
    return prefix + sym.name, element, sym


def _resolve_sites(addrs, objects, main_obj) -> dict[int, tuple[str, str, str | None]]:
    """init return address -> (site id, readable name, source expression of the lock)."""
    by_obj: dict[str, list[int]] = defaultdict(list)
    result = {}
    for addr in addrs:
        obj = syms.object_at(objects, addr)
        if obj is None:
            result[addr] = (f"init@{addr:#x}", f"pthread_mutex_init called from {addr:#x} (no object)", None)
        else:
            by_obj[obj.path].append(addr)
    for path, addrs_here in by_obj.items():
        obj = next(o for o in objects if o.path == path)
        call = {a: a - obj.bias - 1 for a in addrs_here}  # -1: inside the call instruction
        found = syms.code_sites(path, list(call.values()))
        for addr in addrs_here:
            site = found.get(call[addr])
            if site:
                site_id = f"{Path(site.file).name}:{site.line}"
                where = f" in {site.function}()" if site.function else ""
                expression = _init_expression(site.file, site.line)
                result[addr] = (site_id, f"pthread_mutex_init{where} at {site.file}:{site.line}", expression)
                continue
            func = syms.symbols(path).func_at(call[addr])
            prefix = "" if obj is main_obj else f"{obj.name}:"
            if func:
                site_id = f"{prefix}{func.name}+{call[addr] + 1 - func.value:#x}"
            else:
                site_id = f"{obj.name}+{call[addr] + 1:#x}"
            result[addr] = (site_id, f"pthread_mutex_init called from {site_id} (no debug info: build with -g)", None)
    return result


_INIT_CALL = re.compile(r"pthread_mutex_init\s*\(\s*(?P<arg>[^,]+?)\s*,")


def _init_expression(file: str, line: int) -> str | None:
    """The lock argument of the pthread_mutex_init call at file:line, when the source is there."""
    try:
        lines = Path(file).read_text(errors="replace").splitlines()
    except OSError:
        return None
    text = " ".join(lines[max(0, line - 1) : line + 2])
    m = _INIT_CALL.search(text)
    return m.group("arg") if m else None


def _name_array_elements(groups) -> None:
    """Elements of one symbol at a regular stride are named like array elements: locks[3]."""
    for g in groups:
        offsets = []
        for lock, element in g.members:
            m = re.fullmatch(r"(\w+)\+0x([0-9a-f]+)", element)
            if not m:
                break
            offsets.append((m.group(1), int(m.group(2), 16)))
        if len(offsets) != len(g.members) or len({n for n, _ in offsets}) != 1 or len(offsets) < 2:
            continue
        values = sorted({o for _, o in offsets})
        stride = 0
        for a, b in zip(values, values[1:]):
            stride = gcd(stride, b - a)
        if stride < MUTEX_SIZE or values[0] % stride:
            continue
        g.members = [(lock, f"{name}[{off // stride}]") for (lock, _), (name, off) in zip(g.members, offsets)]


def _counts(records: list[RawLock]) -> dict:
    acq = sum(r.acq for r in records)
    return {
        "acquisitions": acq,
        "contended": sum(r.contended for r in records),
        "wait_ns": sum(r.wait_ns for r in records),
        "hold_ns": sum(r.hold_ns for r in records),
    }


def _pct(counts: dict, total: int) -> float:
    return round(100.0 * (counts["wait_ns"] + counts["hold_ns"]) / total, 3) if total else 0.0


def _misses(records: list[RawLock], cache_ok: bool):
    measured = sum(r.cs_measured for r in records)
    if not cache_ok or not measured:
        return None
    return {ev: round(sum(r.misses[i] for r in records) / measured, 2) for i, ev in enumerate(CACHE_EVENTS)}


def _lock_entry(g: _Group, group_of_rec: dict[int, str], total: int, cache_ok: bool) -> dict:
    records = [lock for lock, _ in g.members]
    counts = _counts(records)
    nested_in = sorted({group_of_rec[n] for r in records for n in r.nested if n in group_of_rec} - {g.lock_id})
    entry = {"id": g.lock_id, "name": g.name, "kind": g.kind}
    if g.site:
        entry["site"] = g.site
    if g.expression:
        entry["expression"] = g.expression
    if g.symbol:
        entry["symbol"] = g.symbol
    entry.update(counts)
    entry["cs_time_pct"] = _pct(counts, total)
    entry["cache_misses_per_cs"] = _misses(records, cache_ok)
    entry["nested_in"] = nested_in
    entry["self_nested"] = any(group_of_rec.get(n) == g.lock_id and n != r.rec for r in records for n in r.nested)
    elements = defaultdict(list)
    for lock, element in g.members:
        elements[element].append(lock)
    if len(elements) > 1 or len(records) > 1:
        entry["elements"] = sorted(
            (
                {"name": name, **_counts(recs), "cs_time_pct": _pct(_counts(recs), total)}
                for name, recs in elements.items()
            ),
            key=lambda e: -e["cs_time_pct"],
        )
    else:
        entry["elements"] = None
    return entry


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
        lock["cs_time_pct"] = _pct(lock, total)  # recomputed: both producers agree by construction
    locks.sort(key=lambda l: (-l["cs_time_pct"], l["id"]))
    data.setdefault("partial", False)
    data["path"] = str(path)
    return data


def save(profile: dict, path: Path) -> None:
    atomic_file.write_text(path, json.dumps(profile, indent=2) + "\n")
