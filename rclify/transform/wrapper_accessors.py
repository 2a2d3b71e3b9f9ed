"""The accessors of lock wrappers (`rclify_mutex_of_item_lock(hv)`: the mutex a wrapper locks, for
rcl_execute; `rclify_work_of_<wrapper>()`: its work): written right after the wrapper's `}`, a
prototype before the first use in each file that calls one, a weak fallback where the wrapper
is another file's (docs/transform.md, "What a region is")."""

from typing import TYPE_CHECKING

from rclify.ctext.declarator import declarator
from rclify.ctext.tokens import identifiers_used
from rclify.templates import templates
from rclify.transform.vocabulary import Wrapper

if TYPE_CHECKING:  # render.py calls edits()
    from rclify.transform.render import FileRenderer


def edits(renderer: "FileRenderer", wrappers_here: list[Wrapper],
          accessors_defined_here: list[Wrapper]) -> list[tuple[int, int, str]]:
    """The insertions a file's rendering makes for the accessors: wrappers_here, the wrapper
    functions defined in the file; accessors_defined_here, those whose accessor goes here."""
    extra = []  # at equal offsets, edits apply in list order: prototypes first
    # calls to a static wrapper may all have been extracted: keep -Wunused-function quiet
    extra += [(w.start_offset, w.start_offset, "__attribute__((unused)) ")
              for w in wrappers_here if w.is_static]
    # one prototype per accessor, before its first use or definition (-Wmissing-prototypes,
    # -Wredundant-decls), not before: its parameter types may be declared further down
    defined = {w.name for w in accessors_defined_here}
    # another file's static wrapper reached here is an inner one of a chain (pipeline.py refuses the
    # others): only its outer wrapper's accessor calls its accessor, in its own file
    inner = [w for outer in accessors_defined_here for w in outer.chain()[1:]]  # their accessors call these
    called = [w for w in renderer.accessors_used.values() if w.name in renderer.called_here]
    needed = {w.name: w for w in [*called, *accessors_defined_here, *inner]
              if not (w.is_static and not w.in_header and w.name not in defined)}
    called_at: dict[str, int] = {}  # an inner wrapper's accessor: called by an accessor defined here
    for outer in accessors_defined_here:
        for inner in outer.chain()[1:]:
            called_at[inner.name] = min(outer.end_offset, called_at.get(inner.name, outer.end_offset))
    where: dict[int, list[Wrapper]] = {}
    for w in sorted(needed.values(), key=lambda w: w.name):
        first = min(renderer.first_use.get(w.name, len(renderer.parsed.data)),
                    w.end_offset if w.name in defined else len(renderer.parsed.data),
                    called_at.get(w.name, len(renderer.parsed.data)))
        where.setdefault(first, []).append(w)
    for first, wrappers in sorted(where.items()):
        text = "".join(f"{prototype};\n" for w in wrappers
                       if not (w.in_header and w.name not in defined)
                       for prototype in accessor_prototypes(w))  # a header's are in the header
        text += "".join(render_accessor(w, fallback=True) for w in wrappers
                        if w.kind == "lock" and w.name not in defined and not w.storage)
        if text:
            extra.append((first, first, renderer.own_lines(first, text)))
    # an accessor goes right after its wrapper's `}`: the lines after it keep their numbers
    extra += [(w.end_offset, w.end_offset, render_accessor(w) + f"#line {renderer.line(w.end_offset)}\n")
              for w in accessors_defined_here]
    return extra


def accessor_prototypes(wrapper: Wrapper) -> list[str]:
    """The accessor's prototype (a lock wrapper's: rcl_execute takes the mutex), and the work
    function's when the wrapper has work."""
    params = ", ".join(declarator(t, p) for t, p in zip(wrapper.param_types, wrapper.params)) or "void"
    out = [f"{wrapper.storage}pthread_mutex_t *{wrapper.accessor}({params})"] if wrapper.kind == "lock" else []
    if wrapper.work:
        out.append(f"{wrapper.storage}void {wrapper.work_function}({params})")
    return out


def render_accessor(wrapper: Wrapper, fallback: bool = False) -> str:
    """The accessor of a wrapper's mutex (and its work function); `fallback`: the weak accessor a
    caller file carries (a wrapper's work has no fallback: it is not linked without it)."""
    params = ", ".join(declarator(t, p) for t, p in zip(wrapper.param_types, wrapper.params)) or "void"
    template = "extract/accessor_fallback.c.j2" if fallback else "extract/accessor.c.j2"
    unused = {text: [p for p in wrapper.params if p not in identifiers_used(text)]
              for text in (wrapper.expr, wrapper.work)}
    return templates().get_template(template).render(wrapper=wrapper, params=params, unused=unused)
