"""rclify bench memcached: the original and the transformed memcached side by side under memcslap.

Each measurement starts a fresh server on 127.0.0.1 (a free port), runs one memcslap workload
against it (get-only or set-only, as in the RCL paper: --test=get / --test=set, --concurrency,
--execute-number) and stops the server.  Original and transformed runs alternate, in a different
order each round, so slow drifts of a shared machine fall on both sides.  Reported: the median ops/s
of each side, and the median (and range) over the rounds of transformed / original, each ratio taken
from two runs made back to back.

The original is the pristine Debian source built without rclify (work/memcached.original, made on
first use); the transformed tree must have been built (`rclify check` builds it).  Pointing
--transformed at an untransformed tree gives the noise floor: a ratio near 1.0.

Every server started here is killed before returning, on errors and Ctrl-C included.
"""

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rclify.targets.memcached import source as memcached
from rclify.lock_config import NO_OVERRIDE, validate_override
from rclify.progress import format_seconds
from rclify.errors import BuildError, RclifyError, ToolMissingError, UsageError

DEFAULT_LOCKS = ["*=posix", "*=rcl", NO_OVERRIDE]
WORKLOADS = ("get", "set")
LIMITS = {"rounds": 10, "concurrency": 256, "execute_number": 1_000_000, "threads": 64}
SLAP_NAMES = ("memcslap", "memslap")  # Debian's libmemcached-tools 1.1 ships memslap as memcslap
# (memcaslap is memaslap, a different tool without --test)


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument(
        "--original", type=Path, metavar="PATH",
        help="original memcached: a binary or a built tree (default: build work/memcached.original "
        "from Debian's pristine source)",
    )
    p.add_argument(
        "--transformed", type=Path, metavar="PATH", default=memcached.DEFAULT_DEST,
        help="transformed memcached: a binary or a built tree (default: %(default)s)",
    )
    p.add_argument(
        "--locks", metavar="SPEC", action="append",
        help=f"RCLIFY_LOCKS value for the transformed server, repeatable; '{NO_OVERRIDE}' = lock_config.h "
        f"as written (default: {' '.join(DEFAULT_LOCKS)})",
    )
    p.add_argument("--workloads", default="get,set", help="comma-separated: get, set (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=3, help="alternating original/transformed rounds (default: 3)")
    p.add_argument("--concurrency", type=int, default=4, help="memcslap client threads (default: 4)")
    p.add_argument(
        "--execute-number", type=int, default=50000, help="operations per client thread (default: 50000)"
    )
    p.add_argument("--threads", type=int, default=4, help="memcached worker threads, -t (default: 4)")
    p.add_argument(
        "--run-timeout", type=float, default=120.0, metavar="SECONDS",
        help="limit for one memcslap run (default: 120)",
    )
    p.add_argument(
        "--max-seconds", type=float, default=1200.0, metavar="SECONDS",
        help="stop starting new runs after this long (default: 1200)",
    )
    p.add_argument(
        "--server-cpus", type=cpu_list, metavar="LIST",
        help="run memcached on these CPUs only (e.g. 1 or 2-15): steadier figures on a small machine, "
        "where the scheduler otherwise places server and client threads differently from run to run",
    )
    p.add_argument("--client-cpus", type=cpu_list, metavar="LIST", help="run memcslap on these CPUs only (e.g. 0)")
    return p


def cpu_list(text: str) -> set[int]:
    """'0', '1,3' or '2-15' -> a set of CPU numbers this process may use."""
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            lo, dash, hi = part.strip().partition("-")
            cpus.update(range(int(lo), int(hi if dash else lo) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad CPU list {text!r} (expected e.g. 0, 1,3 or 2-15)") from None
    allowed = os.sched_getaffinity(0)
    if not cpus or not cpus <= allowed:
        raise argparse.ArgumentTypeError(f"CPU list {text!r}: this machine allows {sorted(allowed)}")
    return cpus


def _cpus_text(cpus: set[int] | None) -> str:
    return ",".join(map(str, sorted(cpus))) if cpus else "any"


def _pinned(cpus: set[int] | None):
    """A preexec_fn that confines the child to cpus (None: no change)."""
    return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None


@dataclass
class Measure:
    workload: str
    locks: str
    original: list[float] = field(default_factory=list)  # ops/s, one per round
    transformed: list[float] = field(default_factory=list)

    @property
    def pair_ratios(self) -> list[float]:
        """transformed / original of each round: the two runs of a round are adjacent in time."""
        return [t / o for o, t in zip(self.original, self.transformed)]

    @property
    def ratio(self) -> float | None:
        return statistics.median(self.pair_ratios) if self.pair_ratios else None


def run(args) -> int:
    locks = [validate_override(s) for s in (args.locks or DEFAULT_LOCKS)]
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    for w in workloads:
        if w not in WORKLOADS:
            raise UsageError(f"--workloads: unknown workload {w!r} (expected get, set)")
    for name, limit in LIMITS.items():
        value = getattr(args, name)
        if not 1 <= value <= limit:
            raise UsageError(f"--{name.replace('_', '-')} must be from 1 to {limit}")
    slap = find_slap()
    original = resolve_binary(args.original) if args.original else build_original()
    transformed = resolve_binary(args.transformed)
    print(f"original:    {original}\ntransformed: {transformed}\nclient:      {slap} "
          f"--concurrency={args.concurrency} --execute-number={args.execute_number}; server -t {args.threads}",
          flush=True)
    if args.server_cpus or args.client_cpus:
        print(f"cpus:        server {_cpus_text(args.server_cpus)}, client {_cpus_text(args.client_cpus)}", flush=True)
    if original.resolve() == transformed.resolve():
        print("note: original and transformed are the same binary: the ratio shows the noise", flush=True)

    measures = {(w, s): Measure(w, s) for w in workloads for s in locks}
    start = time.monotonic()
    servers: list[subprocess.Popen] = []
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        for rnd in range(args.rounds):
            for (workload, spec), m in measures.items():
                sides = [("original", original), ("transformed", transformed)]
                if rnd % 2:
                    sides.reverse()
                for side, binary in sides:
                    if time.monotonic() - start > args.max_seconds:
                        print(f"stopping: --max-seconds {args.max_seconds:.0f} reached", flush=True)
                        raise _OutOfTime
                    env = dict(os.environ)
                    env.pop("RCLIFY_LOCKS", None)
                    if side == "transformed" and spec != NO_OVERRIDE:
                        env["RCLIFY_LOCKS"] = spec
                    ops = measure(binary, env, slap, workload, args, servers)
                    getattr(m, side).append(ops)
                    print(f"[{format_seconds(time.monotonic() - start):>7}] round {rnd + 1}/{args.rounds} "
                          f"{workload} {spec:<10} {side:<11} {ops:>12,.0f} ops/s", flush=True)
    except _OutOfTime:
        pass
    finally:
        for proc in servers:
            stop_server(proc)
        signal.signal(signal.SIGTERM, previous)
    print()
    print(format_table(list(measures.values())), flush=True)
    return 0


class _OutOfTime(Exception):
    pass


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def find_slap() -> str:
    for name in SLAP_NAMES:
        if path := shutil.which(name):
            return path
    raise ToolMissingError("memcslap not found: apt-get install libmemcached-tools")


def resolve_binary(path: Path) -> Path:
    binary = path / "memcached" if path.is_dir() else path
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise UsageError(f"no memcached binary at {binary}: build the tree first (rclify check {path})")
    built = binary.stat().st_mtime
    newer = [f.name for f in binary.parent.glob("*.[ch]") if f.stat().st_mtime > built]
    if newer:
        raise UsageError(
            f"{binary} is older than {', '.join(sorted(newer)[:3])}{' ...' if len(newer) > 3 else ''}: "
            f"rebuild it first (rclify check {binary.parent})"
        )
    return binary.absolute()


def build_original(dest: Path = memcached.DEFAULT_DEST) -> Path:
    """work/memcached.original: the pristine source built as it comes (no rclify flags), once."""
    dest = Path(dest).absolute()
    tree = dest.with_name(dest.name + ".original")
    binary = tree / "memcached"
    if binary.is_file():
        return binary
    source = memcached.fetch(dest, log=lambda m: print(m, flush=True))
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(source.pristine, tree, symlinks=True)
    print(f"building the original memcached in {tree}", flush=True)
    jobs = str(os.cpu_count() or 1)
    proc = subprocess.run(
        ["bash", "-c", f"./configure && make -j{jobs} memcached"], cwd=tree, capture_output=True, text=True
    )
    if proc.returncode != 0 or not binary.is_file():
        raise BuildError(f"building the original memcached in {tree} failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary: Path, env: dict, threads: int, servers: list, cpus: set[int] | None = None
                 ) -> tuple[subprocess.Popen, int]:
    port = free_port()
    cmd = [str(binary), "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", str(threads), "-m", "512", "-c", "1024"]
    if os.geteuid() == 0:
        cmd += ["-u", "root"]  # memcached refuses to run as root without -u
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_pinned(cpus))
    servers.append(proc)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BuildError(f"{binary} exited at start ({proc.returncode}): {proc.stderr.read().strip()[-500:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"version\r\n")
                if s.recv(64).startswith(b"VERSION"):
                    return proc, port
        except OSError:
            time.sleep(0.05)
    raise BuildError(f"{binary} did not answer on 127.0.0.1:{port} within 10s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stderr:
        proc.stderr.close()


def measure(binary: Path, env: dict, slap: str, workload: str, args, servers: list) -> float:
    """ops/s of one memcslap run against a fresh server."""
    proc, port = start_server(binary, env, args.threads, servers, args.server_cpus)
    try:
        cmd = [slap, f"--servers=127.0.0.1:{port}", f"--test={workload}",
               f"--concurrency={args.concurrency}", f"--execute-number={args.execute_number}"]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.run_timeout,
                                 preexec_fn=_pinned(args.client_cpus))
        except subprocess.TimeoutExpired:
            raise BuildError(f"memcslap --test={workload} ran past --run-timeout {args.run_timeout:.0f}s") from None
        ops = parse_slap(out.stdout, workload)
        if out.returncode != 0 or ops is None:
            raise BuildError(f"memcslap --test={workload} failed ({out.returncode}): {(out.stdout + out.stderr)[-800:]}")
        if proc.poll() is not None:
            raise BuildError(f"{binary} died during the {workload} run (exit {proc.returncode})")
        return ops
    finally:
        stop_server(proc)
        servers.remove(proc)


def parse_slap(text: str, workload: str) -> float | None:
    """memslap 1.1 prints e.g. 'Time to get  200000 keys by  4 threads:  1.234 seconds.'"""
    m = re.search(rf"Time to {workload}\s+(\d+) keys by\s+\d+ threads:\s+([\d.]+) seconds", text)
    if not m or float(m[2]) <= 0:
        return None
    return int(m[1]) / float(m[2])


def format_table(measures: list[Measure]) -> str:
    header = ["workload", "assignment", "rounds", "original ops/s", "transformed ops/s", "ratio", "range"]
    rows = []
    for m in measures:
        med = lambda xs: f"{statistics.median(xs):,.0f}" if xs else "-"  # noqa: E731
        ratios = m.pair_ratios
        rows.append([m.workload, m.locks, str(len(ratios)), med(m.original), med(m.transformed),
                     f"{m.ratio:.3f}" if ratios else "-",
                     f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-"])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) if i >= 2 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in [header, *rows]]
    return "\n".join(lines + ["(ops/s: medians over the rounds; ratio: median over the rounds of transformed / original"
                               " measured back to back; range: lowest-highest of those ratios)"])


def main(argv: list[str] | None = None) -> int:
    parser = add_arguments(argparse.ArgumentParser(prog="rclify bench memcached --", description=__doc__.split("\n")[0]))
    args = parser.parse_args(argv)
    try:
        return run(args)
    except RclifyError as err:
        print(f"rclify bench memcached: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("rclify bench memcached: interrupted (servers stopped)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
