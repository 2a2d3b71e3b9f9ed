"""A region's record in the report: where it is, what locks it, and its fate, which has one owner.

A record is built once, when its file is rendered (`RegionRecord.of`), or for a C++ lock call
(cxx.py) as hybrid from the start.  Its fate changes only through its own methods: `renumbered`
when its file is rendered again (a function's sections are numbered anew), `leave_hybrid` when a
later step (the compile check) takes its extraction back.  `to_json` is the report's
"regions" entry: the one place its JSON is written (report.py).

The JSON's keys and their order are the report's format, which saved reports and their readers
(tests/fuzz/campaign.py, users' scripts) rely on: a region extracted then left hybrid keeps what its
extraction found, with `function_extracted` gone (no such function was written) and the refusal
after it.
"""

from dataclasses import dataclass, fields

from rclify.transform.refusals import REASONS, Reason
from rclify.transform.regions import Region
from rclify.transform.render import FileRenderer
from rclify.transform.shapes.registry import SHAPES


@dataclass
class Section:
    """What an extraction wrote and found: kept when the region is left hybrid after."""

    runs_on_caller_thread: bool
    thread_bound_because: str  # what the analysis found (also when lock_config.h overrules it)
    waits_on_condvar: bool  # called with rcl_execute_may_wait: never run on a combiner
    exits: int
    context: list[str]  # the captured names
    hoisted: list[str]
    # unlock/relock pairs inside (resumable section), a loop-carried section, the section read
    # from a statement macro's expansion, va_arg reads run before it
    windows: int
    loop_carried: bool
    from_macro_expansion: bool
    variadic_reads_before: bool
    shapes: list[str]  # shapes/: the idioms its section and call site are written by
    placement_override: dict | None = None  # lock_config.h's: {"runs", "reason", "section"}

    def to_json(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.placement_override is None:
            del out["placement_override"]
        return out


@dataclass
class WhyHybrid:
    """Why a region stays hybrid (refusals.py): its first reason, where, and the others."""

    reason: str
    reason_line: int
    why: str
    other_reasons: list[str]
    unrecognized: str | None = None  # an unrecognised lock shape: what it was

    @classmethod
    def of(cls, reason: Reason, line: int, others: list[str] | None = None) -> "WhyHybrid":
        return cls(str(reason), line, REASONS[reason], others or [])

    def to_json(self) -> dict:
        out = {"reason": self.reason, "reason_line": self.reason_line, "why": self.why,
               "other_reasons": self.other_reasons}
        return out | ({"unrecognized": self.unrecognized} if self.unrecognized is not None else {})


@dataclass
class RegionRecord:
    file: str  # relative to the tree's root
    line: int
    function: str
    lock: str
    via: str
    kind: str
    lock_expr: str
    end_line: int | None = None  # a C region's last line (a C++ lock call's record, cxx.py, has none)
    function_extracted: str | None = None  # the section's function, while it is extracted
    section: Section | None = None  # set when it was extracted, even if left hybrid after
    why_hybrid: WhyHybrid | None = None  # None: extracted
    lock_id: str | None = None  # its lock's lock_config.h entry, once the lock table is matched

    @classmethod
    def of(cls, rel: str, region: Region, renderer: FileRenderer) -> "RegionRecord":
        """The record of a region as its file was rendered: extracted, or hybrid and why."""
        record = cls(rel, region.line, region.function.spelling, region.lock.mutex, region.lock.via,
                     region.lock.kind, region.lock.wrapper_expr or region.lock.mutex,
                     end_line=region.parsed.data.count(b"\n", 0, region.end) + 1)
        if not region.extractable:
            reason, line = region.problems[0]
            record.why_hybrid = WhyHybrid.of(reason, line, sorted({str(r) for r, _ in region.problems[1:]} - {reason}))
            if reason == Reason.UNRECOGNIZED_LOCK_SHAPE and region.unrecognized:
                record.why_hybrid.unrecognized = region.unrecognized  # what it was: the summary line says it too
            return record
        extraction = next(e for e in renderer.extractions if e.region is region)
        placement = extraction.placement
        record.function_extracted = extraction.fn_name
        record.section = Section(
            placement.local, placement.because, placement.may_wait, len(region.exits),
            [c.name for c in extraction.captures], extraction.hoisted, len(region.windows),
            region.loop is not None, region.expansion is not None, region.lifted is not None,
            [shape.name for shape in SHAPES if shape.applies(region)])
        if placement.override is not None:
            record.section.placement_override = {
                "runs": "on-server" if placement.override.on_server else "on-caller",
                "reason": placement.override.reason, "section": placement.override.section}
        return record

    @property
    def status(self) -> str:
        return "extracted" if self.why_hybrid is None else "hybrid"

    @property
    def extracted(self) -> bool:
        return self.why_hybrid is None

    @property
    def overridden_section(self) -> str | None:
        """The section lock_config.h placed (RCLIFY_SECTION_<name>_ON_*), if it did."""
        override = self.section.placement_override if self.section is not None else None
        return override["section"] if override is not None else None

    def renumbered(self, fn_name: str) -> None:
        """Its file was rendered again: its section's function has this name now."""
        self.function_extracted = fn_name

    def leave_hybrid(self, reason: Reason, why: str) -> None:
        """Its file failed a later step: it keeps its lock calls (a hybrid region's earlier
        reasons move to other_reasons; what an extraction found stays reported)."""
        earlier = [self.why_hybrid.reason, *self.why_hybrid.other_reasons] if self.why_hybrid is not None else []
        unrecognized = self.why_hybrid.unrecognized if self.why_hybrid is not None else None
        self.why_hybrid = WhyHybrid(str(reason), self.line, why, sorted(set(earlier) - {reason}), unrecognized)
        self.function_extracted = None  # no such function was written

    def to_json(self) -> dict:
        """The report's entry: keys in the order the report has always had them."""
        out: dict = {"file": self.file, "line": self.line}
        out |= {"end_line": self.end_line} if self.end_line is not None else {}
        out |= {"function": self.function, "lock": self.lock, "via": self.via, "kind": self.kind,
                "lock_expr": self.lock_expr, "status": self.status}
        if self.function_extracted is not None:
            out["function_extracted"] = self.function_extracted
        if self.section is not None:
            out |= self.section.to_json()
        if self.why_hybrid is not None:
            out |= self.why_hybrid.to_json()
        return out | ({"lock_id": self.lock_id} if self.lock_id is not None else {})
