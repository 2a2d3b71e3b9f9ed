"""Choosing an algorithm and an RCL server per lock from a profile (paper §5.4.1 and §5.4.5).

Per lock, the share of all threads' time spent in its critical sections, acquisition included
(cs_time_pct: the paper's measure of contention), is compared with two thresholds measured on the
paper's microbenchmark, and the machine's CPU count decides what a contended lock can afford
(choose(), a pure function):
  below `lower` (15%)           cold: POSIX locks do not collapse            -> posix
  from `lower` to `upper` (60%) warm: POSIX collapses, RCL may help, other
                                algorithms might help as much               -> the combining lock
  `upper` and above             hot: RCL expected to beat every other lock  -> rcl
  warm or hot on 2 CPUs or fewer: RCL's server needs a core of its own, half
                                the machine or more; a combining lock runs
                                the sections on a thread that waits anyway  -> the combining lock
The combining lock is COMBINING (CC-Synch, the paper's best combining lock); where the runtime
does not have it (not registered in algorithms.def), RCL as before, and the comment says so.
RCL locks are then placed on servers.  Locks taken inside one another share a server (one
connected group); independent groups are spread over the servers, heaviest first onto the least
loaded one, so that one server does not serialise independent sections (false serialisation).
There are never more servers than groups, nor than max_servers (default: CPUs - 1, at least 1).
A profiled lock is matched to its lock_config.h entry by lock_id_matching.py.
"""

import os
import re
from dataclasses import dataclass

from rclify import algorithms, lock_config
from rclify.profiling import calibration
from rclify.profiling.lock_id_matching import Matching, match_ids
from rclify.errors import UsageError
from rclify.progress import few
from rclify.lock_config import LockEntry

DEFAULT_LOWER, DEFAULT_UPPER = 0.15, 0.60
COMBINING = "ccsynch"  # the combining lock chosen where a core for an RCL server does not pay
RCL_MIN_CPUS = 3  # fewer: an RCL server would take half the machine or more


@dataclass
class Verdict:
    algorithm: str  # a registered algorithm name: posix, rcl, COMBINING
    heat: str  # cold | warm | hot
    why: str


@dataclass
class Decision:
    lock_id: str  # lock_config.h id (or the profile's id when there is no configuration)
    profile_ids: list[str]
    pct: float
    verdict: Verdict
    figures: str
    server: int | None = None
    server_note: str = ""
    kept_edit: str | None = None  # the hand edit kept instead of the choice

    @property
    def choice(self) -> str:
        return f"rcl on server {self.server}" if self.verdict.algorithm == "rcl" else self.verdict.algorithm

    @property
    def rationale(self) -> str:
        text = f"{self.figures}; {self.verdict.why}"
        if self.server_note:
            text += f"; {self.server_note}"
        if self.kept_edit:
            text += f"; hand edit kept ({self.kept_edit})"
        return f"{text} -> {self.choice}"


def check_thresholds(lower: float, upper: float) -> None:
    if not (0.0 <= lower <= upper <= 1.0):
        raise UsageError(
            f"thresholds out of range: need 0 <= lower <= upper <= 1 (fractions of thread time), "
            f"got --lower {lower} --upper {upper}"
        )


def machine_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_max_servers(cpus: int | None = None) -> int:
    return max(1, (cpus or machine_cpus()) - 1)


def classify(pct: float, lower: float = DEFAULT_LOWER, upper: float = DEFAULT_UPPER) -> Verdict:
    """The paper's verdict from the time share alone (posix or RCL, as `rclify report` shows it).
    pct: percent of thread time in the lock's critical sections (acquisition included)."""
    share = pct / 100.0
    lo, up = f"{lower * 100:g}%", f"{upper * 100:g}%"
    if share < lower:
        return Verdict("posix", "cold", f"below the lower threshold {lo}: cold")
    if share < upper:
        return Verdict("rcl", "warm", f">= {lo}, < {up}: warm, POSIX collapses here, RCL may help")
    return Verdict("rcl", "hot", f">= the upper threshold {up}: hot, RCL expected to beat other locks")


def choose(pct: float, cpus: int, available: tuple[str, ...], lower: float = DEFAULT_LOWER,
           upper: float = DEFAULT_UPPER) -> Verdict:
    """The algorithm for a lock with pct percent of thread time in its sections, on a machine of
    `cpus` CPUs whose runtime has the `available` algorithms (algorithms.names()); `why` says why,
    for the comment assign writes above the lock."""
    paper = classify(pct, lower, upper)
    if paper.heat == "cold":
        return paper
    heat, lo, up = paper.heat, f"{lower * 100:g}%", f"{upper * 100:g}%"
    band = f">= the upper threshold {up}: hot" if heat == "hot" else f">= {lo}, < {up}: warm, POSIX collapses here"
    combining = COMBINING in available
    if cpus < RCL_MIN_CPUS:
        why = (f"{band}; on {cpus} CPU{'s' if cpus != 1 else ''} an RCL server would take "
               f"{'the only' if cpus == 1 else 'one of the two'} core{'' if cpus == 1 else 's'} from the program's threads")
        if combining:
            return Verdict(COMBINING, heat, f"{why}: a combining lock runs the sections on a thread that waits "
                                            "for the lock anyway, no core set aside")
        return Verdict("rcl", heat, f"{why}, but this runtime has no combining lock ({COMBINING}): RCL all the same")
    if heat == "hot":
        return Verdict("rcl", heat, f"{band}, RCL expected to beat every other lock (the paper: 3.2x the next "
                                    f"best); {cpus} CPUs leave a core for its server")
    if combining:
        return Verdict(COMBINING, heat, f"{band}; below {up} a combining lock gets most of RCL's gain (sections "
                                        "run in batches on one thread, their data stays in its cache) without "
                                        "setting a core aside for a server")
    return Verdict("rcl", heat, f"{band}, RCL may help (this runtime has no combining lock, {COMBINING})")


UNCALIBRATED = "uncalibrated: no bench record of this machine (run `rclify bench`, or `rclify tune` with your workload)"


def calibrate(verdict: Verdict, pct: float, threads: int, cpus: int, available: tuple[str, ...],
              record: "calibration.Record | None") -> Verdict:
    """The verdict checked against this machine's bench (record): an algorithm the record ranks
    below posix at the lock's contention and thread count is never chosen; the best one ranked
    above posix there is, else posix.  The figure that decided is said in `why`.  Without a
    record a contended lock's verdict says it is uncalibrated."""
    if verdict.algorithm == "posix":
        return verdict  # cold: posix does not collapse, whatever the machine
    if record is None:
        return Verdict(verdict.algorithm, verdict.heat, f"{verdict.why}; {UNCALIBRATED}")
    share = pct / 100.0
    mine = calibration.figure(record, verdict.algorithm, share, threads)
    if mine is not None and mine.ratio >= 1.0:
        return Verdict(verdict.algorithm, verdict.heat, f"{verdict.why}; calibrated: {mine.text()}")
    allowed = [a for a in available if a != "profile" and (a != "rcl" or cpus >= RCL_MIN_CPUS)]
    top = calibration.best(record, share, threads, allowed)
    ranked = (f"{mine.text()}" if mine is not None
              else f"{verdict.algorithm} not measured in this machine's bench")
    if top is not None and top.algorithm != "posix" and top.ratio > 1.0:
        return Verdict(top.algorithm, verdict.heat, f"{verdict.why}, but calibrated: {ranked}; the best here: "
                                                    f"{top.text()}")
    return Verdict("posix", verdict.heat, f"{verdict.why}, but calibrated: {ranked}, and nothing ranks above posix "
                                          "there: posix kept")


def figures(lock: dict) -> str:
    acq = lock["acquisitions"]
    contended = 100.0 * lock["contended"] / acq if acq else 0.0
    text = (
        f"{lock['cs_time_pct']:.1f}% of thread time in critical sections "
        f"(wait {lock['wait_ns'] / 1e6:.1f} ms, hold {lock['hold_ns'] / 1e6:.1f} ms), "
        f"{acq} acquisitions, {contended:.1f}% contended"
    )
    misses = lock.get("cache_misses_per_cs")
    if misses:
        text += ", " + ", ".join(f"{v:g} {k} misses/CS" for k, v in misses.items())
    return text


# ---- the decisions ----------------------------------------------------------------------------


def _merged(locks: list[dict]) -> dict:
    """Several profile locks that are one configured lock (e.g. matched by name): summed."""
    if len(locks) == 1:
        return locks[0]
    out = {k: sum(l[k] for l in locks) for k in ("acquisitions", "contended", "wait_ns", "hold_ns", "cs_time_pct")}
    out["cache_misses_per_cs"] = None
    out["nested_in"] = sorted({n for l in locks for n in l.get("nested_in", [])})
    return out


def decide(
    profile: dict,
    config_ids: list[str] | None,
    lower: float = DEFAULT_LOWER,
    upper: float = DEFAULT_UPPER,
    max_servers: int | None = None,
    cpus: int | None = None,
    available: tuple[str, ...] | None = None,
    record: "calibration.Record | None" = None,
) -> tuple[list[Decision], Matching]:
    """Decisions for the configured locks the profile saw (every profile lock when config_ids is None).
    Profile locks the configuration lacks are left out (matching.unmatched, .ambiguous: the caller
    warns); only a profile none of whose locks is configured is refused.  cpus: of the machine the
    program will run on (default: this one); available: the runtime's algorithms (default: the
    registry's); record: this machine's bench ranking (calibration.py), None: uncalibrated."""
    check_thresholds(lower, upper)
    if cpus is None:
        cpus = machine_cpus()
    if cpus < 1:
        raise UsageError(f"--cpus must be at least 1, got {cpus}")
    if available is None:
        available = algorithms.names()
    if max_servers is None:
        max_servers = default_max_servers(cpus)
    if not 1 <= max_servers <= 64:
        raise UsageError(f"--max-servers must be between 1 and 64 (RCL_MAX_SERVERS), got {max_servers}")
    if config_ids is None:
        matching = Matching({l["id"]: l["id"] for l in profile["locks"]})
    else:
        matching = match_ids(profile, config_ids)
        if not profile["locks"]:
            raise UsageError(f"{profile.get('path', 'the profile')}: no locks were profiled: nothing to assign")
        if not matching.to_config:
            missing = matching.unmatched + matching.ambiguous
            raise UsageError(
                f"{profile.get('path', 'the profile')}: none of its {len(missing)} locks is in the lock "
                f"configuration ({few(missing, 4)}); is it a profile of another program, or of an older build?"
            )

    by_config: dict[str, list[dict]] = {}
    for lock in profile["locks"]:
        cid = matching.to_config.get(lock["id"])
        if cid:
            by_config.setdefault(cid, []).append(lock)

    decisions = []
    for cid, locks in by_config.items():
        lock = _merged(locks)
        verdict = choose(lock["cs_time_pct"], cpus, available, lower, upper)
        verdict = calibrate(verdict, lock["cs_time_pct"], int(profile.get("threads") or 1), cpus, available, record)
        decisions.append(Decision(cid, [l["id"] for l in locks], lock["cs_time_pct"], verdict, figures(lock)))
    nested = {
        cid: {matching.to_config[n] for l in locks for n in l.get("nested_in", []) if n in matching.to_config}
        for cid, locks in by_config.items()
    }
    _place_on_servers([d for d in decisions if d.verdict.algorithm == "rcl"], nested, max_servers)
    decisions.sort(key=lambda d: (-d.pct, d.lock_id))
    return decisions, matching


def _place_on_servers(rcl: list[Decision], nested: dict[str, set[str]], max_servers: int) -> None:
    # groups of locks taken inside one another (union-find over nesting edges)
    parent = {d.lock_id: d.lock_id for d in rcl}

    def root(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for d in rcl:
        for outer in nested.get(d.lock_id, ()):
            if outer in parent:
                parent[root(outer)] = root(d.lock_id)
    groups: dict[str, list[Decision]] = {}
    for d in rcl:
        groups.setdefault(root(d.lock_id), []).append(d)
    ordered = sorted(groups.values(), key=lambda g: (-sum(d.pct for d in g), min(d.lock_id for d in g)))
    n_servers = min(max_servers, len(ordered))
    load = [0.0] * n_servers
    members: list[list[Decision]] = [[] for _ in range(n_servers)]
    for group in ordered:
        server = min(range(n_servers), key=lambda s: (load[s], s))
        load[server] += sum(d.pct for d in group)
        members[server].extend(group)
        for d in group:
            d.server = server
    for server, locks in enumerate(members):
        for d in locks:
            partners = [o.lock_id for o in locks if o is not d]
            together = [o for o in partners if o in nested.get(d.lock_id, set()) or d.lock_id in nested.get(o, set())]
            if not partners:
                d.server_note = f"alone on server {server} of {n_servers}"
            elif together and len(together) == len(partners):
                d.server_note = f"nested with {few(together, 3)}: same server"
            else:
                d.server_note = (
                    f"shares server {server} with {few(partners, 3)} (server {server} load {load[server]:.1f}%; "
                    f"max-servers {max_servers} < {len(ordered)} independent groups)"
                    if len(ordered) > max_servers
                    else f"shares server {server} with {few(partners, 3)}"
                )


# ---- lock_config.h ------------------------------------------------------------------------------

_PREVIOUS = re.compile(r"-> (?P<alg>\w+)(?: on server (?P<server>\d+))?$")


def _hand_edit(entry: LockEntry) -> str | None:
    """What the user set by hand since the last assign (None: nothing), read off its rationale.
    A waiting policy is always a hand edit (assign leaves every lock on auto): the user chose it
    for that algorithm, so both are kept."""
    if entry.policy != algorithms.DEFAULT_POLICY:
        return f"{entry.choice} on server {entry.server}" if entry.algorithm == "rcl" else entry.choice
    previous = _PREVIOUS.search(entry.rationale or "")
    if previous is None:
        if entry.rationale or (entry.algorithm == "posix" and entry.server == 0):
            return None
    else:
        alg, server = previous.group("alg"), previous.group("server")
        if entry.algorithm == alg and (alg != "rcl" or server is None or entry.server == int(server)):
            return None
    return f"{entry.algorithm} on server {entry.server}" if entry.algorithm == "rcl" else entry.algorithm


def apply(decisions: list[Decision], entries: list[LockEntry], force: bool = False) -> list[LockEntry]:
    """Entries with what assign owns updated (algorithm, RCL server, rationale); the rest kept."""
    by_id = {d.lock_id: d for d in decisions}
    updated = []
    for entry in entries:
        d = by_id.get(entry.lock_id)
        if d:
            edit = None if force else _hand_edit(entry)
            if edit:
                d.kept_edit = edit
            else:
                entry.algorithm = d.verdict.algorithm
                entry.policy = algorithms.DEFAULT_POLICY  # honoured by every algorithm
                if d.server is not None:
                    entry.server = d.server
            entry.rationale = d.rationale
        updated.append(entry)
    return updated


def write_config(path, decisions: list[Decision], force: bool = False) -> list[LockEntry]:
    entries = lock_config.read(path)
    entries = apply(decisions, entries, force)
    lock_config.write(path, entries)
    return entries
