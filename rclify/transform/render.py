"""Rendering extractions as C: the section functions, their call sites, the accessors.

For one source file, FileRenderer turns every extractable region into
  - a context struct and a `static int rclify_cs_<function>_<n>(void *)` placed before the
    enclosing function (templates/extract/cs_function.c.j2), whose body is the region's code
    with the caller's locals reached through the context and each early exit a `return FLAG;`
  - a call site replacing the region (templates/extract/call_site.c.j2): fill the context, run
    the section with RCL_EXECUTE, then run the tail of the exit it took.
What to capture and hoist, and where the section runs, is decided by plan.py, hoisting.py and
placement.py.  Generated code keeps the original's line numbers with #line directives.
"""

from dataclasses import dataclass, field

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.declarator import declarator
from rclify.ctext.preprocessor import guards_at
from rclify.ctext.tokens import identifiers_used, rename_identifiers, tokenize
from rclify.templates import templates
from rclify.transform import enclosing_function, frame_bound, hoisting, lifetimes, placement, plan, wrapper_accessors
from rclify.lock_config import SectionOverride
from rclify.transform.function_locals import Declarations
from rclify.transform.hoisting import Hoist
from rclify.transform.placement import Placement
from rclify.transform.plan import Capture
from rclify.transform.refusals import Refusal
from rclify.transform.regions import Exit, Region
from rclify.transform.shapes import loop_carried, windows
from rclify.transform.shapes.registry import BODY_ORDER, SHAPES
from rclify.transform.shapes.shape import Writing
from rclify.transform.thread_state import ThreadState
from rclify.transform.vocabulary import Wrapper

@dataclass
class Extraction:
    region: Region
    n: int
    fn_name: str
    ctx_type: str
    captures: list[Capture] = field(default_factory=list)
    hoisted: list[str] = field(default_factory=list)
    placement: Placement = field(default_factory=lambda: Placement(False))

    @property
    def local(self) -> bool:
        """May use thread-local state: runs on the calling thread (rcl_execute_local)."""
        return self.placement.local


class FileRenderer:
    def __init__(self, parsed: ParsedFile, regions: list[Region], thread_state: ThreadState | None = None,
                 overrides: dict[str, SectionOverride] | None = None):
        self.parsed = parsed
        self.regions = regions
        self.thread_state = thread_state or ThreadState()  # what may use thread-local state
        self.overrides = overrides or {}  # lock_config.h's RCLIFY_SECTION_<name>_ON_SERVER/_ON_CALLER
        self.functions: dict[int, list[str]] = {}  # enclosing function start -> generated C
        self.accessors_used: dict[str, Wrapper] = {}
        self.extractions: list[Extraction] = []
        self._call_sites: dict[int, str] = {}
        self._counters: dict[str, int] = {}
        self._decls = Declarations()
        self._hoist_plan: dict[int, list[Hoist]] = {}
        self.first_use: dict[str, int] = {}  # wrapper name -> where its first section goes
        # the wrappers whose accessor or work function this file's code calls itself (not the inner
        # ones of a chain, which only the outer accessor calls, in the wrapper's file: their types
        # may be opaque here, nng's nni_mtx behind the public nng_mtx)
        self.called_here: set[str] = set()

    # -- public --------------------------------------------------------------------------
    def plan(self) -> None:
        """Decides every region's extraction (or refusal) and generates its code."""
        for region in self.regions:
            if region.extractable:
                try:
                    self._hoist_plan[region.start] = hoisting.hoists(self.parsed, region, self._decls)
                except Refusal as refusal:
                    region.refuse(refusal.reason, region.line)
        for region in self.regions:
            if region.extractable:
                self._call_site(region)  # plans (and may refuse) every region, nested ones first

    def render(self, wrappers_here: list[Wrapper], accessors_defined_here: list[Wrapper]) -> str | None:
        """The file's new text (after plan()), or None when nothing changes.

        wrappers_here: the wrapper functions defined in this file; accessors_defined_here: those
        whose accessor (used by some extracted region, maybe in another file) goes here."""
        if not self.extractions and not accessors_defined_here:
            return None
        edits = wrapper_accessors.edits(self, wrappers_here, accessors_defined_here)
        return self.render_range(0, len(self.parsed.data), edits, top_level=True)

    # -- rendering -----------------------------------------------------------------------
    def render_range(self, start: int, end: int, extra: list[tuple[int, int, str]] = (),
                      top_level: bool = False) -> str:
        """Source text of [start, end) with extracted regions (and extra edits) replaced."""
        edits = [(r.start, r.end, self._call_sites[r.start]) for r in self.regions
                 if r.extractable and r.start in self._call_sites and start <= r.start and r.end <= end]
        edits += [e for e in extra if start <= e[0] and e[1] <= end]
        if top_level:
            for fn_start, generated in self.functions.items():
                edits.append((fn_start, fn_start, "".join(generated) + f"#line {self.line(fn_start)}\n"))
        edits.sort(key=lambda e: (e[0], -e[1]))
        out, pos = [], start
        for e_start, e_end, text in edits:
            if e_start < pos:
                continue  # inside an edit already applied (a nested region's own call site)
            out.append(self.parsed.text(pos, e_start))
            out.append(text)
            pos = e_end
        out.append(self.parsed.text(pos, end))
        return "".join(out)

    def _call_site(self, region: Region) -> str:
        if region.start in self._call_sites:
            return self._call_sites[region.start]
        for inner in self.regions:  # nested regions first: their call sites are part of our body
            if inner is not region and inner.extractable and region.contains(inner):
                self._call_site(inner)
        try:
            text = self._extract(region)
        except Refusal as refusal:
            region.refuse(refusal.reason, region.line)
            return ""
        self._call_sites[region.start] = text
        return text

    def _extract(self, region: Region) -> str:
        """The call site that replaces the region; its section's struct and function go to
        self.functions.  Each idiom's part is its shape's (shapes/)."""
        frame_bound.check(region)
        lifetimes.check_literals(region)
        plan.check_unlock_effects(region, self._decls)
        writing = self._writing(region)
        body = self._section_body(writing)
        window_texts = [windows.text(self, region, w) for w in region.windows]
        released_texts = window_texts + ([loop_carried.released_text(self, region)] if region.loop is not None else [])
        captures, body, macros = self._captures(writing, body, released_texts)  # may refuse: before anything is recorded
        extraction = self._record(writing, captures)
        cs = templates().get_template("extract/cs_function.c.j2").render(
            function=writing.function, file=self.parsed.path.name, line=region.line,
            mutex_text=region.lock.mutex, ctx_type=extraction.ctx_type, captures=captures,
            fn_name=extraction.fn_name, body=body.rstrip(), body_line=self.line(region.lock_end),
            trylock=region.is_trylock, storage="static inline" if self.parsed.guard_line is not None else "static",
            macros=macros,
        )
        call = self._call_site_text(writing, extraction, captures, window_texts)
        self._counters[writing.function] = writing.number
        self._place_function(region, cs, body)
        self.extractions.append(extraction)
        return call

    def _writing(self, region: Region) -> Writing:
        """The region's number in its function, its hoists, and the edits of its text: exits,
        hoisted declarations, directives blanked, windows, variadic reads."""
        fn_name = region.function.spelling
        n = self._counters.get(fn_name, 0) + 1
        hoists = self._hoist_plan[region.start]
        # a variable an enclosing region hoists too is declared once, by the outermost
        outer_hoisted = {h.start for r in self.regions if r is not region and r.extractable and r.contains(region)
                         for h in self._hoist_plan.get(r.start, [])}
        # a return under a lock guard: its value is computed in the section, returned by the caller
        returned = f"rclify_ret_{fn_name}_{n}" if any(e.value for e in region.exits) else ""
        exit_edits = [(e.unlock_start, e.tail_end, f"{_exit_statement(e, returned)}\n#line {self.line(e.tail_end)}\n")
                      for e in region.exits]
        hoist_edits = [(h.start, h.end, h.assignment) for h in hoists]
        blank_edits = [(a, b, "\n") for a, b in region.blank_directives]
        if region.windows:
            windows.check_locals(region, self._decls, {v.hash for h in hoists for v in h.variables})
        window_edits = [(w.unlock_start, w.relock_end, windows.statement(self, region, k, w))
                        for k, w in enumerate(region.windows, 1)]
        lift_edits = [(*region.lifted, f"\n#line {self.line(region.lifted[1])}\n")] \
            if region.lifted is not None else []  # run before the call
        edits = exit_edits + hoist_edits + blank_edits + window_edits + lift_edits
        return Writing(self, region, edits, exit_edits, hoists, _indent_of(self.parsed.data, region.start),
                       fn_name, n, returned, outer_hoisted)

    def _section_body(self, writing: Writing) -> str:
        """The section's statements: its shape's, else the region's text with its edits; with the
        wrappers' work and a resumable section's dispatch."""
        region = writing.region
        body = next((shape.body(writing) for shape in BODY_ORDER if shape.applies(region)), None)
        if body is None:
            body = self.render_range(region.lock_end, region.body_end, writing.edits)
        # a wrapper's work runs where its call stood: first (after locking), last (before unlocking);
        # a loop-carried section's first run only (shapes/loop_carried.py)
        if region.loop is None and region.lock.work:
            body = f" {region.lock.work}" + body
        if region.windows:  # a run after a window goes on after its relock
            body = windows.dispatch(region) + body
        body += region.end_work
        if region.end_label:
            body = body.rstrip() + " ;"  # the label closes the section: it needs a statement
        return body

    def _captures(self, writing: Writing, body: str, released_texts: list[str]) -> tuple[list[Capture], str, list]:
        """What the section takes from its caller (plan.captures, with a resumable section's
        resume point and a guarded return's value), the body reading them, and the enclosing
        function's macros it needs."""
        region, fn_name, n = writing.region, writing.function, writing.number
        captures = plan.captures(self.parsed, self._decls, region, body,
                                 {v.spelling: v for h in writing.hoists for v in h.variables}, "\n".join(released_texts))
        if region.loop is not None or region.windows:  # where the section goes on (0: from its start)
            captures.append(Capture("rclify_resume", "int rclify_resume", f"rclify_resume_{fn_name}_{n}",
                                    "rclify_ctx->rclify_resume"))
        if writing.returned:
            typ, returned = region.function.result_type.spelling, writing.returned
            captures.append(Capture(returned, declarator(typ, f"(*{returned})"), f"&{returned}",
                                    f"(*rclify_ctx->{returned})"))
        spelled = plan.spelled_captures(self.parsed, region, captures, body)  # kept as written
        mapping = {c.name: c.use for c in captures if c.name not in dict(spelled)}
        mapping.update({name: f'"{fn_name}"' for name in enclosing_function.FUNCTION_NAMES})
        body = rename_identifiers(body, mapping)
        return captures, body, enclosing_function.macros(region, body) + spelled

    def _record(self, writing: Writing, captures: list[Capture]) -> Extraction:
        """The extraction as the report and lock_config.h see it; the wrappers whose accessors it uses."""
        region, fn_name, n = writing.region, writing.function, writing.number
        extraction = Extraction(region, n, f"rclify_cs_{fn_name}_{n}", f"rclify_ctx_{fn_name}_{n}")
        extraction.captures = captures
        extraction.hoisted = [v.spelling for h in writing.hoists for v in h.variables]
        extraction.placement = placement.runs_on_caller_thread(region, self.thread_state, f"{fn_name}_{n}",
                                                               self.overrides)
        at = _insertion_point(self.parsed.data, region.function)
        for wrapper in region.wrappers_used():  # their accessor, their work function
            self.accessors_used[wrapper.name] = wrapper
            self.first_use[wrapper.name] = min(at, self.first_use.get(wrapper.name, at))
        self.called_here.update(w.name for w in region.wrappers_called())
        return extraction

    def _call_site_text(self, writing: Writing, extraction: Extraction, captures: list[Capture],
                        window_texts: list[str]) -> str:
        """The call of the section and the dispatch on its flags (exits, a trylock's outcome, a
        resumable section's released parts), as each shape of the region needs it."""
        region, returned = writing.region, writing.returned
        exits = [{"flag": e.flag, "tail": f"return {returned};" if e.value else self._tail_text(e),
                  "line": self.code_line(e.tail_start if not e.value else e.unlock_start),
                  "always": region.ends_by_exit} for e in region.exits]
        if region.is_trylock:  # paper Algorithm 3: the section is told whether it got the lock
            if region.after is not None and self.parsed.text(*region.after).strip():
                exits.insert(0, {"flag": 0, "tail": self.render_range(*region.after).strip(),
                                 "line": self.code_line(region.after[0])})
            if region.otherwise is not None:
                exits.insert(0, {"flag": -1, "tail": self.render_range(*region.otherwise).strip(),
                                 "line": self.code_line(region.otherwise[0])})
        released = []  # what the caller runs between two runs of a resumable section
        if region.loop is not None:
            released.append({"flag": len(region.exits) + 1, "line": self.code_line(region.loop.released[0]),
                             "text": loop_carried.released_text(self, region), "resume": 1, "guards": []})
        for k, (w, text) in enumerate(zip(region.windows, window_texts), 1):
            released.append({"flag": len(region.exits) + k, "line": self.code_line(w.released[0]),
                             "text": text, "resume": k, "guards": windows.guards(region, w)})
        result_type = region.function.result_type.spelling
        call = templates().get_template("extract/resumable_call_site.c.j2" if released
                                        else "extract/call_site.c.j2").render(
            hoists=[region.lock.result] * bool(region.lock.result)
            + [h.declaration for h in writing.hoists if h.start not in writing.outer_hoisted]
            + [f"{declarator(result_type, returned)};"] * bool(returned),
            labeled=_is_labeled(region), indent=writing.indent,
            ctx_type=extraction.ctx_type, n=f"{writing.function}_{writing.number}", captures=captures, exits=exits,
            mutex=region.lock.mutex, fn_name=extraction.fn_name, trylock=region.is_trylock,
            local=extraction.local, may_wait=extraction.placement.may_wait, released=released,
            run_as=lambda locked, unlocked: _run_as(writing, locked, unlocked),
        ).rstrip("\n") + (f" {region.end_result}" if region.end_result else "")
        for shape in SHAPES:
            if shape.applies(region):
                call = shape.call_site(writing, call)
        line_start = self.parsed.data.rfind(b"\n", 0, region.start) + 1
        if call.startswith("#") and self.parsed.data[line_start:region.start].strip():
            call = "\n" + call  # a directive starts a line (`if (e) JOB_ERROR(e);`, under #if)
        return call + f"\n#line {self.line(region.end)}\n"

    def _place_function(self, region: Region, cs: str, body: str) -> None:
        """The section's struct and function, before the function the region is in."""
        fn = region.function
        # a region inside an #if of its function: its struct and function exist under the same
        # condition, so every configuration the original builds in still builds (no unused static
        # function, no reference to what the other branch declares)
        conditions = [g for g in guards_at(self.parsed.data, region.start, since=fn.extent.start.offset)
                      if g != self.parsed.guard_line] \
            + [c for shape in SHAPES if shape.applies(region) for c in shape.conditions(region)] \
            + list(region.lock.conditions)
        if conditions:
            cs = "".join(f"{c}\n" for c in conditions) + cs.rstrip("\n") + "\n" + "#endif\n" * len(conditions)
        generated = self.functions.setdefault(_insertion_point(self.parsed.data, fn), [])
        if fn.spelling in identifiers_used(body) and (prototype := enclosing_function.prototype(self.parsed, fn)) \
                and not any(prototype in text for text in generated):
            generated.insert(0, f"{prototype}\n")  # a recursive call in the section: declared before it
        generated.append(cs)

    def or_original(self, region: Region, if_line: str, call: str) -> str:
        """call under the #if line, the region's original text (hybrid) under its #else."""
        return (f"{if_line}\n{call}\n#else\n#line {self.line(region.start)}\n"
                f"{self.parsed.text(region.start, region.end).rstrip()}\n#endif")

    def line(self, offset: int) -> int:
        """1-based line of an offset of the original file: generated code keeps lines with #line."""
        return self.parsed.data.count(b"\n", 0, offset) + 1

    def code_line(self, offset: int) -> int:
        """The line of the first code at or after offset: where text that is stripped starts."""
        data = self.parsed.data
        while offset < len(data) and data[offset : offset + 1].isspace():
            offset += 1
        return self.line(offset)

    def own_lines(self, offset: int, text: str) -> str:
        """text to insert at offset on lines of its own, the original lines keeping their numbers."""
        at_line_start = offset == 0 or self.parsed.data[offset - 1 : offset] == b"\n"
        return ("" if at_line_start else "\n") + text + f"#line {self.line(offset)}\n"

    def _tail_text(self, e: Exit) -> str:
        text = self.render_range(e.tail_start, e.tail_end).strip()
        if e.result:
            text = f"{e.result} {text}"
        if e.drop_final_break:
            tokens = tokenize(text)
            if len(tokens) >= 2 and tokens[-2].text == "break" and tokens[-1].text == ";":
                text = text[: tokens[-2].start].rstrip()
        return text


def _indent_of(data: bytes, offset: int) -> str:
    line_start = data.rfind(b"\n", 0, offset) + 1
    line = data[line_start:offset].decode(errors="replace")
    return line[: len(line) - len(line.lstrip())]


def _run_as(writing: Writing, locked: str, unlocked: str) -> str:
    """How the call site runs the section: the runtime's call, as each shape of the region needs it."""
    for shape in SHAPES:
        if shape.applies(writing.region):
            locked = shape.run(writing, locked, unlocked)
    return locked


def _is_labeled(region: Region) -> bool:
    before = region.parsed.data[: region.start].rstrip()
    return before.endswith(b":")


def _insertion_point(data: bytes, function: ci.Cursor) -> int:
    """Before the function and the comments that document it, at the start of a line."""
    at = data.rfind(b"\n", 0, function.extent.start.offset) + 1
    while True:
        before = data[:at].rstrip()
        if before.endswith(b"*/"):
            opening = before.rfind(b"/*")
            if opening < 0:
                break
            line_start = data.rfind(b"\n", 0, opening) + 1
            if data[line_start:opening].strip():
                break  # the comment ends a line of code
            at = line_start
        else:
            line_start = before.rfind(b"\n") + 1
            if before[line_start:].lstrip().startswith(b"//"):
                at = line_start
            else:
                break
    return at


def _exit_statement(e: Exit, returned: str) -> str:
    """What an exit becomes in the section: `return FLAG;`, after its unlock wrapper's work and a
    guarded return's value (braced: it may stand for one statement, `if (c) return 0;`)."""
    before = [e.work] * bool(e.work) + [f"{returned} = ({e.value});"] * bool(e.value)
    return f"{{ {' '.join(before)} return {e.flag}; }}" if before else f"return {e.flag};"
