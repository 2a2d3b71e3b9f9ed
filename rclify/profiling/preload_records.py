"""The preload profiler's raw records (runtime/profiler/preload.c) turned into profile.json's lock
entries: records grouped by allocation site, addresses resolved to variables and source lines
through the program's symbols, counts and cache misses summed.

A lock set up inside one of the program's lock helpers (a function that creates a lock for its
caller: rclify/lock_identity/lock_helpers/, read from the sources the debug info names) is named by
the helper's call, one level up per helper, as `rclify transform` names it: each call of
`my_mutex_init(&tbl->lock)` is a lock of its own, with the expression `&tbl->lock`."""

import re
from collections import defaultdict
from dataclasses import dataclass, field
from math import gcd
from pathlib import Path

from rclify.profiling import symbols as syms
from rclify.profiling.format import CACHE_EVENTS, FORMAT, VERSION, cs_time_pct, status_text
from rclify.ctext.preprocessor import quoted_includes
from rclify.lock_identity import lock_helpers

MUTEX_SIZE = 40  # sizeof(pthread_mutex_t) on x86-64/aarch64 glibc

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
    callers: list[int] = field(default_factory=list)  # init locks: return addresses above site


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
                callers = [] if len(f) < 14 or f[13] == "-" else [int(x, 16) for x in f[13].split(",")]
                raw.locks.append(
                    RawLock(int(f[0]), int(f[1], 16), int(f[2], 16), f[3], f[4] == "1",
                            *(int(x) for x in f[5:10]), [int(f[10]), int(f[11])], nested, callers)
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
    sites = _resolve_sites({(l.site, *l.callers) for l in init_locks}, objects, main_obj)
    for lock in raw.locks:
        obj = syms.object_at(objects, lock.addr)
        var = _variable_at(obj, lock.addr, main_obj) if obj else None
        if lock.kind == "i":
            site_id, site_name, expression = sites[(lock.site, *lock.callers)]
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
        partial_reason = f"the program was killed by {status_text(status)}"
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
        "exit_status": status_text(status),
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


def _resolve_sites(chains, objects, main_obj) -> dict[tuple[int, ...], tuple[str, str, str | None]]:
    """(init return address, its callers' return addresses...) -> (site id, readable name, source
    expression of the lock).  The site is the init call's, or, when that is inside a lock helper,
    the helper's call (lock_helpers/), as many levels up as there are helpers."""
    by_obj: dict[str, list[int]] = defaultdict(list)
    frames: dict[int, list[syms.Site]] = {}  # return address -> source frames, innermost (inlined) first
    for addr in {a for chain in chains for a in chain}:
        obj = syms.object_at(objects, addr)
        if obj is not None:
            by_obj[obj.path].append(addr)
    for path, addrs_here in by_obj.items():
        obj = next(o for o in objects if o.path == path)
        call = {a: a - obj.bias - 1 for a in addrs_here}  # -1: inside the call instruction
        found = syms.code_chains(path, list(call.values()))
        frames.update({a: found[call[a]] for a in addrs_here if call[a] in found})
    sources = _sources({s.file for fs in frames.values() for s in fs})
    helpers = lock_helpers.infer(sources).by_file if sources else {}  # (file, name) -> helper
    result, named = {}, {}
    for chain in chains:
        addr = chain[0]
        if frames.get(addr):
            named[chain] = _helper_call([(a, s) for a in chain for s in frames.get(a, [])], sources, helpers)
            continue
        obj = syms.object_at(objects, addr)
        if obj is None:
            result[chain] = (f"init@{addr:#x}", f"pthread_mutex_init called from {addr:#x} (no object)", None)
            continue
        vaddr = addr - obj.bias - 1
        func = syms.symbols(obj.path).func_at(vaddr)
        prefix = "" if obj is main_obj else f"{obj.name}:"
        if func:
            site_id = f"{prefix}{func.name}+{vaddr + 1 - func.value:#x}"
        else:
            site_id = f"{obj.name}+{vaddr + 1:#x}"
        result[chain] = (site_id, f"pthread_mutex_init called from {site_id} (no debug info: build with -g)", None)
    # helper calls on one line (`init(&a) || init(&b)`): told apart by their code address, in order
    calls_on_line: dict[tuple, list[int]] = defaultdict(list)
    for found in named.values():
        if found.helper is not None and found.addr not in calls_on_line[found.where]:
            calls_on_line[found.where].append(found.addr)
    for chain, found in named.items():
        nth = sorted(calls_on_line[found.where]).index(found.addr) if found.helper is not None else 0
        result[chain] = found.named(sources, nth)
    return result


_MAX_HEADERS = 300


def _sources(files: set[str]) -> dict[str, str]:
    """The texts of files (the sources the debug info names) and of the headers they include with
    `#include "..."`, found beside the including file or in a directory above it (or its include/
    or src/): the lock helper inference reads the tree's macros there (libuv's UV__ERR)."""
    out: dict[str, str] = {}
    todo = sorted(files)
    while todo and len(out) < len(files) + _MAX_HEADERS:
        file = todo.pop(0)
        if file in out:
            continue
        try:
            out[file] = Path(file).read_text(errors="replace")
        except OSError:
            continue
        for name in quoted_includes(out[file]):
            found = _include(Path(file).parent, name)
            if found is not None and str(found) not in out:
                todo.append(str(found))
    return out


def _include(directory: Path, name: str) -> Path | None:
    for up in [directory, *directory.parents][:4]:
        for candidate in (up / name, up / "include" / name, up / "src" / name):
            if candidate.is_file():
                return candidate
    return None


@dataclass
class _Found:
    """Where an init call's lock was created: the init itself, or the call of the lock helper that
    made it (helper set), with the code address of that call's frame."""

    init: syms.Site
    site: syms.Site
    addr: int
    helper: object = None  # lock_helpers.Helper
    lock: object = None  # lock_helpers.HelperLock

    @property
    def where(self) -> tuple:
        return self.site.file, self.site.line, self.helper.name if self.helper else ""

    def named(self, sources: dict[str, str], nth: int) -> tuple[str, str, str | None]:
        site, init = self.site, self.init
        where = f" in {site.function}()" if site.function else ""
        site_id = f"{Path(site.file).name}:{site.line}"
        if self.helper is None:
            return site_id, f"pthread_mutex_init{where} at {site.file}:{site.line}", _init_expression(init.file, init.line)
        call = lock_helpers.call_at(sources[site.file], site.file, site.line, self.helper, nth)
        via = f" (pthread_mutex_init at {init.file}:{init.line})" if init is not site else ""
        called = f"{call.via}() (a macro for {self.helper.name}())" if call and call.via else f"{self.helper.name}()"
        return (site_id + (f"#{nth + 1}" if nth else ""), f"{called}{where} at {site.file}:{site.line}{via}",
                call.lock_expression(self.lock) if call else None)


def _helper_call(frames: list[tuple[int, syms.Site]], sources: dict[str, str], helpers) -> _Found:
    """For an init call whose source frames are given (innermost first, each with its code
    address): past each frame that is inside a lock helper to the helper's call."""
    init = frames[0][1]
    found = _Found(init, init, frames[0][0])
    text = sources.get(init.file)
    if text is not None and _init_expression(init.file, init.line) is None:
        # no pthread_mutex_init there: a helper that ended in a tail call to it (its frame is gone)
        called = [h for h in helpers.values() if len(h.locks) == 1 and lock_helpers.call_at(text, init.file, init.line, h)]
        if len(called) == 1:
            found = _Found(init, init, frames[0][0], called[0], called[0].locks[0])
    for k in range(len(frames) - 1):
        frame, (addr, caller) = frames[k][1], frames[k + 1]
        helper = helpers.get((frame.file, frame.function or ""))
        lock = next((l for l in helper.locks if (init.file, init.line) in l.inits), None) if helper else None
        text = sources.get(caller.file)
        if lock is None or text is None \
                or lock_helpers.call_at(text, caller.file, caller.line, helper) is None:
            break
        found = _Found(init, caller, addr, helper, lock)
    return found


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
    entry["cs_time_pct"] = cs_time_pct(counts, total)
    entry["cache_misses_per_cs"] = _misses(records, cache_ok)
    entry["nested_in"] = nested_in
    entry["self_nested"] = any(group_of_rec.get(n) == g.lock_id and n != r.rec for r in records for n in r.nested)
    elements = defaultdict(list)
    for lock, element in g.members:
        elements[element].append(lock)
    if len(elements) > 1 or len(records) > 1:
        entry["elements"] = sorted(
            (
                {"name": name, **_counts(recs), "cs_time_pct": cs_time_pct(_counts(recs), total)}
                for name, recs in elements.items()
            ),
            key=lambda e: -e["cs_time_pct"],
        )
    else:
        entry["elements"] = None
    return entry
