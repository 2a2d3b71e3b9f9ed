"""What a transform found and did: the Outcome every step adds to, its summary and JSON report,
and the diff a dry run prints."""

import difflib
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rclify import __version__, lock_config
from rclify.lock_identity.discovered_sites import NOT_HANDLED
from rclify.transform import call_sites
from rclify.transform.call_sites import CallSite
from rclify.transform.region_records import RegionRecord


@dataclass
class Outcome:
    root: Path
    changed: dict[str, str] = field(default_factory=dict)  # relative path -> new text
    regions: list[RegionRecord] = field(default_factory=list)  # region_records.py
    locks: list[lock_config.LockEntry] = field(default_factory=list)
    config_read: str | None = None  # lock_config.h as the transform read it (None: there was none)
    wrappers: list[dict] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)  # parse errors (file: first error)
    unchanged: dict[str, str] = field(default_factory=dict)  # files left as they were, and why
    excluded: dict[str, str] = field(default_factory=dict)  # paths left alone (exclusions.py), and why
    stubbed_headers: list[str] = field(default_factory=list)
    api_errors: list[str] = field(default_factory=list)  # calls the runtime has no equivalent for
    api_notes: list[str] = field(default_factory=list)
    # calls of lock helpers whose own entry does not reach their lock (lock_helpers.wrap_calls)
    helper_calls_unwrapped: list[str] = field(default_factory=list)
    not_handled: list[dict] = field(default_factory=list)  # pthread_spin_* call sites
    rwlock_calls: list[dict] = field(default_factory=list)  # pthread_rwlock_* call sites: hybrid, and why
    # changed files that did not compile before the transform either (with the flags found): the
    # compile check could only look for new errors -> the original's first error
    unverified: dict[str, str] = field(default_factory=dict)
    kept_posix: list[dict] = field(default_factory=list)  # locks and conds that stay pthread ones (kept_posix.py)
    timings: dict[str, float] = field(default_factory=dict)
    unused_overrides: list[str] = field(default_factory=list)  # lock_config.h sections that name none
    call_sites: list[CallSite] = field(default_factory=list)  # every lock/unlock/trylock call seen
    files_scanned: int = 0
    already_transformed: bool = False
    build_flags: str = ""  # where the analysis's compiler flags came from (build_flags/)
    rerun: dict | None = None  # on a transformed tree: files updated now, files whose edits were carried

    def summary(self) -> dict:
        extracted = [r for r in self.regions if r.extracted]
        hybrid = Counter(r.why_hybrid.reason for r in self.regions if not r.extracted)
        return {
            "files": self.files_scanned,
            "files_changed": len(self.changed),
            "regions": len(self.regions),
            "extracted": len(extracted),
            "extracted_thread_bound": sum(bool(r.section.runs_on_caller_thread) for r in extracted),
            # run where their lock's algorithm runs them (an RCL server, a combiner's pass)
            "delegable": sum(not r.section.runs_on_caller_thread for r in extracted),
            "hybrid": dict(sorted(hybrid.items())),
            "call_sites": call_sites.summary(self.call_sites, self.regions),
            "locks": len(self.locks),
            "wrappers": [w["name"] for w in self.wrappers],
            "parse_failures": len(self.failures),
            "files_left_unchanged": len(self.unchanged),
            "not_handled": {api: sum(s["api"] == api for s in self.not_handled) for api in NOT_HANDLED.values()},
            "rwlock_calls": {"hybrid": len(self.rwlock_calls)},
            "locks_kept_posix": sum(k["kind"] == "mutex" for k in self.kept_posix),
        }


def report_json(outcome: Outcome) -> dict:
    return {
        "rclify": __version__,
        "root": str(outcome.root),
        "build_flags": outcome.build_flags,
        "summary": outcome.summary(),
        "regions": [r.to_json() for r in outcome.regions],
        "call_sites": [s.record(outcome.regions) for s in outcome.call_sites],
        "left_alone_reasons": call_sites.LEFT_ALONE,
        "locks": [vars(e) | {"macro": e.macro} for e in outcome.locks],
        "wrappers": outcome.wrappers,
        "parse_failures": dict(sorted(outcome.failures.items())),
        "files_left_unchanged": outcome.unchanged,
        "left_alone": outcome.excluded,
        "stubbed_headers": outcome.stubbed_headers,
        "api_errors": outcome.api_errors,
        "api_notes": outcome.api_notes,
        "helper_calls_unwrapped": outcome.helper_calls_unwrapped,
        "unverified_files": outcome.unverified,
        "not_handled": outcome.not_handled,
        "rwlock_calls": outcome.rwlock_calls,
        "locks_kept_posix": outcome.kept_posix,
        "section_overrides_unused": outcome.unused_overrides,
        "timings": outcome.timings,
    } | ({"rerun": outcome.rerun} if outcome.rerun is not None else {})


def print_diff(root: Path, texts: dict[str, str], locks: list[lock_config.LockEntry], config_path: Path) -> None:
    """The unified diff from the tree's files to texts ({relative path: new text}), then lock_config.h's."""
    for rel, text in sorted(texts.items()):
        path = root / rel
        old = path.read_bytes().decode("utf-8", "surrogateescape") if path.exists() else ""
        sys.stdout.writelines(difflib.unified_diff(
            old.splitlines(keepends=True), text.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"))
    old = config_path.read_text() if config_path.exists() else ""
    name = os.path.relpath(config_path, root)
    sys.stdout.writelines(difflib.unified_diff(
        old.splitlines(keepends=True), lock_config.render(locks, lock_config.read_sections(config_path)).splitlines(keepends=True),
        f"a/{name}", f"b/{name}"))
