"""rclify run: an unmodified program on the runtime's algorithms, per lock, by interposition.

`rclify run [--locks SPEC | --config lock_config.h] -- CMD ARGS` runs CMD with librclify_run.so
preloaded (runtime/interpose/interpose.c): its pthread mutexes and condition variables run on the
algorithm RCLIFY_LOCKS gives their lock id, the rest on posix.  Lock ids are `rclify profile`'s:
the init call's site (file.c:LINE) or the static variable (file.c:name), named here, before the
run, by the profiler's own naming (rclify/profiling/preload_records.py) from the program's code
and symbols; the library reads them from a table (RCLIFY_RUN_SITES).  docs/runtime.md, "rclify run".
"""

import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rclify import lock_config, runtime_build
from rclify.errors import UsageError
from rclify.profiling import preload_records
from rclify.profiling import symbols as syms
from rclify.profiling.profile import check_interposable, find_program


RUN_LIB = runtime_build.BUILD_DIR / "librclify_run.so"
MUTEX_SIZE = 40  # glibc x86_64 pthread_mutex_t
# The functions through which a program's locks can reach the interposer.
INTERPOSED = ("pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_timedlock", "pthread_mutex_clocklock",
              "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait")
RCL_NOTE = ("rclify run: rcl here is its lock form (hybrid): the program's sections run on their own "
            "threads, and an RCL lock taken this way costs more than a posix one uncontended "
            "(docs/benchmarks.md, 'rclify run'); RCL's speed comes from sections extracted by rclify transform")


def add_parser(sub):
    p = sub.add_parser(
        "run",
        help="run an unmodified program with its locks on the runtime's algorithms (LD_PRELOAD), per lock",
        description="Runs CMD with its pthread mutexes and condition variables on the algorithms SPEC gives "
        "their lock ids (RCLIFY_LOCKS grammar: PATTERN=ALG[/POLICY][:SERVER[@CPU]],...; ids as rclify profile "
        "names them), the rest on posix.  Usage: rclify run [--locks SPEC | --config lock_config.h] -- CMD ARGS.  "
        "Exits with CMD's status.",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--locks", help="RCLIFY_LOCKS spec, e.g. '*=mcs' or 'main.c:42=ccsynch'")
    group.add_argument("--config", type=Path, help="a lock_config.h: each entry's algorithm for its id")
    p.add_argument("--ids-of", action="append", type=Path, default=[], metavar="PROG",
                   help="also name the locks of PROG, a program CMD runs (a server under its test script): "
                   "a spec's ids reach it too (repeatable)")
    return p


def spec_from_config(path: Path) -> str:
    if not path.is_file():
        raise UsageError(f"--config {path}: no such file")
    entries = lock_config.read(path)
    if not entries:
        raise UsageError(f"--config {path}: no lock entry in it")
    parts = []
    for e in entries:
        cpu = f"@{e.cpu}" if e.cpu >= 0 else ""
        parts.append(f"{e.lock_id}={e.choice}:{e.server}{cpu}")
    return ",".join(parts)


CALLERS = 3  # frames above an init call that name a lock made by helpers: the profiler's CALLERS
MAX_CHAINS = 64  # per init site


def _calls(program: Path) -> tuple[list[int], dict[str, list[int]]]:
    """Return addresses (link-time vaddrs) of the program's calls to pthread_mutex_init, and of
    its calls to each of its own functions (by name)."""
    if shutil.which("objdump") is None:
        return [], {}
    proc = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(program)], capture_output=True, text=True,
                          timeout=300)
    inits, calls, pending = [], {}, None
    for line in proc.stdout.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S.*)$", line)
        if not m:
            continue
        if pending is not None:  # the instruction after the call: its address is the return address
            (inits if pending == "pthread_mutex_init" else calls.setdefault(pending, [])).append(int(m.group(1), 16))
            pending = None
        call = re.match(r"call\w*\s.*<([\w.]+)(@[^>]*)?>", m.group(2))
        if call and "+" not in call.group(1):
            pending = call.group(1)
    return inits, calls


def site_table(program: Path) -> tuple[list[tuple[tuple[int, ...], str]], list[tuple[int, int, str]]]:
    """(init sites: (return vaddr and those of up to CALLERS callers, id)), (static variables:
    (vaddr, size, id)), named as the profiler names them: a site's file:line from the debug info,
    moved up to the call of the program's lock helper when the init is inside one
    (preload_records._resolve_sites, which the profiler feeds the frames it recorded; here the
    callers are every call of the enclosing function found in the code); a variable's file:name.
    A site's one-address entry is the id when no longer chain matches the frames at run time."""
    obj = syms.LoadedObject(str(program), 0, 0, 1 << 64)
    inits, calls = _calls(program)
    funcs = syms.symbols(str(program))

    def chains_from(addr: int, depth: int) -> list[tuple[int, ...]]:
        out = [(addr,)]
        func = funcs.func_at(addr - 1)
        if depth < CALLERS and func is not None:
            for ret in calls.get(func.name, []):
                out += [(addr, *rest) for rest in chains_from(ret, depth + 1)]
                if len(out) >= MAX_CHAINS:
                    break
        return out[:MAX_CHAINS]

    chains = {c for a in inits for c in chains_from(a, 0)}
    named = preload_records._resolve_sites(chains, [obj], obj) if chains else {}
    sites = []
    for chain in sorted(chains):
        # a longer chain matters only where it names the lock otherwise than its prefix does
        if len(chain) == 1 or named[chain][0] != named[chain[:-1]][0]:
            sites.append((chain, named[chain][0]))
    statics = []
    types = syms.variable_types(str(program))  # None: no debug information says which hold a mutex
    for sym in funcs.data:
        if sym.size >= MUTEX_SIZE and sym.kind in "bBdDsS" and (types is None or types.may_hold_mutex(sym.value)):
            prefix = f"{Path(sym.file).name}:" if sym.file else ""
            statics.append((sym.value, sym.size, prefix + sym.name))
    return sites, statics


def listed_ids(program: Path, sites, statics) -> tuple[list[str], int]:
    """The lock ids a message may list: the init sites' and the statics' that the debug
    information says are or hold a pthread mutex; and how many other statics may hold one (40
    bytes or more, in code without debug information: what they hold cannot be told)."""
    types = syms.variable_types(str(program))
    mutexes = {i for a, _, i in statics if types is not None and a in types.mutexes}
    return sorted({i for _, i in sites} | mutexes), len({i for _, _, i in statics} - mutexes)


def write_table(path: Path, sites, statics, program: Path | None = None, more: str = "") -> Path:
    """The table librclify_run.so reads (RCLIFY_RUN_SITES): `exe PATH` (the lines up to the next
    `exe` name that program's locks; a process running another program ignores them), `site RET
    [CALLER...] ID` and `static VADDR SIZE ID`, hexadecimal link-time addresses; `more`: other
    programs' sections, appended."""
    head = f"exe {os.path.realpath(program)}\n" if program else ""
    path.write_text(more + head + "".join(f"site {' '.join(f'{a:x}' for a in chain)} {i}\n" for chain, i in sites)
                    + "".join(f"static {a:x} {s:x} {i}\n" for a, s, i in statics))
    return path


def _patterns(spec: str) -> list[tuple[str, str]]:
    out = []
    for entry in spec.split(","):
        pattern, _, value = entry.strip().rpartition("=")
        out.append((pattern, value.split(":")[0].split("/")[0]))
    return out


def _imports(path: Path) -> set[str]:
    if shutil.which("nm") is None:
        return set(INTERPOSED)
    proc = subprocess.run(["nm", "-D", "-u", str(path)], capture_output=True, text=True, timeout=60)
    return {line.split()[-1].split("@")[0] for line in proc.stdout.splitlines() if line.strip()}


def _libraries(program: Path) -> list[Path]:
    if shutil.which("ldd") is None:
        return []
    proc = subprocess.run(["ldd", str(program)], capture_output=True, text=True, timeout=60)
    libs = []
    for line in proc.stdout.splitlines():
        m = re.search(r"=>\s*(/\S+)", line)
        if m and not re.search(r"/lib(c|pthread|m|dl|rt)[.-]", m.group(1)):
            libs.append(Path(m.group(1)))
    return libs


def prepare(command: list[str], spec: str, ids_of: list[Path] = (),
            origin: str = "--locks") -> tuple[Path, list, list, str]:
    """Checks everything before the program starts; returns the program, its lock ids, and the
    table sections of the other programs named (--ids-of).  origin: where spec came from, as the
    messages name it (--locks, or --config FILE)."""
    if not command:
        raise UsageError("give the program to run after `--`: rclify run --locks '*=mcs' -- ./prog ARGS")
    lock_config.validate_override(spec)
    program = find_program(command[0])
    check_interposable(program, "run")  # statically linked, set-user-ID, transformed: one line
    info = syms.read_elf(program)
    sites, statics = site_table(program) if info is not None else ([], [])
    known = {i for _, i in sites} | {i for _, _, i in statics}
    listed, untold = listed_ids(program, sites, statics) if info is not None else ([], 0)
    more = []
    for other in ids_of:
        path = find_program(str(other) if "/" in str(other) else f"./{other}")
        if syms.read_elf(path) is None:
            raise UsageError(f"--ids-of {other}: not an ELF program")
        o_sites, o_statics = site_table(path)
        known |= {i for _, i in o_sites} | {i for _, _, i in o_statics}
        with tempfile.NamedTemporaryFile("r", suffix=".sites") as tmp:
            more.append(write_table(Path(tmp.name), o_sites, o_statics, path).read_text())
    for pattern, _ in _patterns(spec):
        if pattern != "*" and not any(fnmatch.fnmatchcase(i, pattern) for i in known):
            raise UsageError(f"{origin}: unknown lock id {pattern!r} in {program.name} ({_ids_said(listed, untold)}; "
                             "rclify profile lists them; for a program it runs, add --ids-of PROG)")
    if info is not None and not any(set(INTERPOSED) & _imports(p) for p in [program, *_libraries(program)]):
        print(f"rclify run: {program.name} calls no pthread mutex or condvar function: its locks (if any: "
              "raw futexes, its own spinlocks) stay as they are", file=sys.stderr)
    return program, sites, statics, "".join(more)


def _ids_said(listed: list[str], untold: int) -> str:
    """The lock ids for a message: those known to be mutexes, never a guess among the statics."""
    ids = f"its ids: {', '.join(listed[:5])}{', ...' if len(listed) > 5 else ''}" if listed else "no lock id found"
    if untold:
        ids += (f"; {untold} of its statics may hold a mutex, which only debug information can tell: "
                "build it with -g to have them named")
    elif not listed:
        ids += ": build it with -g"
    return ids


def run(args) -> int:
    spec = spec_from_config(args.config) if args.config else (args.locks or "*=posix")
    origin = f"--config {args.config}" if args.config else "--locks"
    program, sites, statics, more = prepare(args.passthrough, spec, args.ids_of, origin)

    if any(alg == "rcl" for _, alg in _patterns(spec)):
        print(RCL_NOTE, file=sys.stderr)
    runtime_build.make("build/librclify_run.so", "the interposer", RUN_LIB)
    with tempfile.TemporaryDirectory(prefix="rclify-run-") as tmp:
        table = write_table(Path(tmp) / "sites", sites, statics, program, more)
        env = environment(spec, table)
        try:
            proc = subprocess.run([str(program), *args.passthrough[1:]], env=env)
        except KeyboardInterrupt:
            return 130
    return proc.returncode if proc.returncode >= 0 else 128 - proc.returncode


def environment(spec: str, table: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LD_PRELOAD"] = " ".join(p for p in [str(RUN_LIB), env.get("LD_PRELOAD", "")] if p)
    env["RCLIFY_LOCKS"] = spec
    env["RCLIFY_RUN_SITES"] = str(table)
    return env



# ---- rclify bench interpose: what the interposer costs an uncontended lock -------------------

BENCH_SOURCE = runtime_build.RUNTIME_DIR / "interpose" / "bench" / "uncontended.c"
# (label, spec; None: no interposer).  The measured lock is uncontended.c:bench_lock.
BENCH_CASES = (
    ("plain (no interposer)", None),
    ("runtime linked in (transformed), mcs lock form: no interposer", "direct:*=mcs"),
    ("interposed, every lock posix (*=posix): the tag test only", "*=posix"),
    ("interposed, this lock posix, another on mcs: + a static-range check",
     "uncontended.c:other_lock=mcs"),
    ("interposed, this lock posix, the rest mcs: + one hashed probe",
     "uncontended.c:bench_lock=posix,*=mcs"),
    ("interposed mcs", "*=mcs"),
    ("interposed ttas", "*=ttas"),
    ("interposed ccsynch (lock form)", "*=ccsynch"),
    ("interposed rcl (lock form, hybrid)", "*=rcl"),
    ("runtime linked in (transformed), rcl lock form: no interposer", "direct:*=rcl"),
)


def spec_alg(spec: str | None) -> set[str]:
    return {alg for _, alg in _patterns(spec.removeprefix("direct:"))} if spec else set()


def bench_interposition(out_dir: Path, rounds: int = 5, pairs: int = 2_000_000) -> str:
    """Uncontended lock+unlock pairs, each case against plain in the same round (rounds alternate
    the cases); the median of the per-round ratios.  Returns the table it prints and writes."""
    import statistics

    runtime_build.make("build/librclify_run.so", "the interposer", RUN_LIB)
    out_dir.mkdir(parents=True, exist_ok=True)
    runtime_build.make("lib", "the runtime", runtime_build.STATIC_LIB)
    prog, direct = out_dir / "uncontended", out_dir / "uncontended_direct"
    for target, flags in ((prog, []), (direct, ["-DRCL_DIRECT", *runtime_build.cflags()])):
        extra = [str(runtime_build.STATIC_LIB), "-ldl"] if target is direct else []
        proc = subprocess.run(["cc", "-O2", "-g", "-pthread", *flags, str(BENCH_SOURCE), "-o", str(target), *extra],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise UsageError(f"building {BENCH_SOURCE.name} failed: {proc.stderr[-1000:]}")
    table = write_table(out_dir / "sites", *site_table(prog), prog)
    ns: dict[str, list[float]] = {label: [] for label, _ in BENCH_CASES}
    for _ in range(rounds):
        for label, spec in BENCH_CASES:
            binary, count = prog, pairs
            if spec is None:
                env = dict(os.environ)
            elif spec.startswith("direct:"):
                binary, env = direct, dict(os.environ, RCLIFY_LOCKS=spec.removeprefix("direct:"))
            else:
                env = environment(spec, table)
            if "rcl" in spec_alg(spec):
                count = max(pairs // 100, 1000)  # microseconds a pair: fewer
            env.pop("RCLIFY_STATS", None)
            done = subprocess.run([str(binary), str(count)], capture_output=True, text=True, env=env, timeout=300)
            if done.returncode != 0:
                raise UsageError(f"{label}: the benchmark failed: {done.stderr[-500:]}")
            ns[label].append(float(done.stdout.strip()))
    plain = ns[BENCH_CASES[0][0]]
    lines = [f"uncontended pthread_mutex_lock+unlock, 1 thread, {pairs} pairs ({max(pairs // 100, 1000)} under rcl), "
             f"{rounds} rounds (median ns per pair; ratio: median of per-round ratios to plain)"]
    for label, _ in BENCH_CASES:
        ratios = [v / p for v, p in zip(ns[label], plain)]
        lines.append(f"  {label:<72} {statistics.median(ns[label]):7.1f} ns  x{statistics.median(ratios):.2f}")
    text = "\n".join(lines) + "\n"
    (out_dir / "interpose.txt").write_text(text)
    return text
