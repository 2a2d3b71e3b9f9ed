"""The calls of helpers in the tree's text (call_sites(), for infer()) and the one at a given line
(call_at(), for the preload profiler)."""

import re

from rclify.ctext.tokens import any_of, call_arguments
from rclify.lock_identity.lock_helpers.c_text import Source, assigned_to, blanked_code, functions, is_call, line_col
from rclify.lock_identity.lock_helpers.model import Helper, HelperCall
from rclify.lock_identity.lock_helpers.names import Names


def call_sites(sources: list[Source], names: Names) -> list[HelperCall]:
    called = {n for _, n in names.helper} | {a.name for a in names.aliases.values()}
    pattern = re.compile(r"\b(" + "|".join(sorted(re.escape(n) for n in called)) + r")\s*\(")
    out = []
    for src in sources:
        code = src.code
        for m in pattern.finditer(code):
            helper = names.lookup(m.group(1), src.file)
            found = call_arguments(code, m.end() - 1) if helper and is_call(code, m.start()) else None
            args = names.helper_args(m.group(1), found[0]) if found is not None else None
            if args is None:
                continue
            fn = next((f for f in src.functions if f.body_start < m.start() < f.body_end), None)
            line, column = line_col(code, m.start())
            via = m.group(1) if m.group(1) != helper.name else ""
            call = HelperCall(src.file, line, column, fn.name if fn else "", helper, args,
                              assigned_to(code, m.start(), fn), False, via, tuple(found[0]) if via else ())
            # inside a helper, a call creates that helper's lock (every lock a helper creates is)
            call.internal = fn is not None and (src.file, fn.name) in names.helper
            out.append(call)
    return out


def call_at(text: str, file: str, line: int, helper: Helper, nth: int = 0) -> HelperCall | None:
    """The nth call of helper (or of one of its macro aliases) that spans the 1-based line of text
    (a file's source), or None: for a profiler that knows a call's line from the debug info (a
    call through a macro has the line of the macro's use)."""
    code = blanked_code(text)
    called = any_of({helper.name, *helper.aliases})
    for m in re.finditer(rf"\b({called})\s*\(", code):
        found = call_arguments(code, m.end() - 1) if is_call(code, m.start()) else None
        alias = helper.aliases.get(m.group(1)) if m.group(1) != helper.name else None
        args = (alias.helper_args(found[0]) if alias else tuple(found[0])) if found is not None else None
        if args is None:
            continue
        first, column = line_col(code, m.start())
        if first <= line <= code.count("\n", 0, found[1]) + 1 and nth > 0:
            nth -= 1
        elif first <= line <= code.count("\n", 0, found[1]) + 1:
            fn = next((f for f in functions(file, code) if f.body_start < m.start() < f.body_end), None)
            return HelperCall(file, first, column, fn.name if fn else "", helper, args,
                              assigned_to(code, m.start(), fn), False, alias.name if alias else "",
                              tuple(found[0]) if alias else ())
    return None
