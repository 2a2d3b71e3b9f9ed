"""The rewrite: each call of a helper that creates locks with lock_config.h entries wrapped in
RCL_LOCK_SITE (wrap_calls(), run by rewrite_api.py)."""

import re

from rclify.ctext.languages import is_cxx, is_header
from rclify.ctext.tokens import call_arguments
from rclify.lock_identity.lock_helpers.c_text import blanked_code, functions, is_call
from rclify.lock_identity.lock_helpers.model import HelperCall


def wrap_calls(text: str, file: str, sites, kept_ids: set[str] = frozenset()) -> tuple[str, list[str]]:
    """text with each call of a helper that creates locks with lock_config.h entries (sites: the
    lock table's) wrapped in RCL_LOCK_SITE(call, RCL_SITE(init id, RCLIFY_LOCK_<call site>), ...).

    The calls are found again in text (extraction may have moved a call into the section's
    function, rclify_cs_<function>_<n>) by helper, arguments and function, in order; calls
    already wrapped are left alone (running it twice changes nothing).  Returns the new text and
    notes ('file:line: ...') for calls not found again."""
    if is_cxx(file) or is_header(file):
        return text, []
    wanted: dict[int, tuple[HelperCall, list[tuple[str, str]]]] = {}
    for site in sites:
        for cl in getattr(site, "helper_calls", []):
            if cl.call.file != file:
                continue
            entry = wanted.setdefault(id(cl.call), (cl.call, []))
            entry[1].extend(p for p in ((init, site.macro) for init in cl.lock.init_ids if init not in kept_ids)
                            if p not in entry[1])
    if not wanted:
        return text, []
    code = blanked_code(text)
    defined = functions(file, code)
    names = re.compile(r"\b(" + "|".join(sorted({re.escape(c.via or c.helper.name) for c, _ in wanted.values()})) + r")\s*\(")
    pending = sorted(wanted.values(), key=lambda w: (w[0].line, w[0].column))
    edits = []
    for m in names.finditer(code):
        found = call_arguments(code, m.end() - 1) if is_call(code, m.start()) else None
        if found is None:
            continue
        fn = next((f.name for f in defined if f.body_start < m.start() < f.body_end), "")
        key = (m.group(1), tuple(re.sub(r"\s+", "", a) for a in found[0]))
        match = next((w for w in pending if w[0].key == key and
                      (fn == w[0].function or fn.startswith(f"rclify_cs_{w[0].function}_"))), None)
        if match is None:
            continue
        pending.remove(match)
        call, pairs = match
        if re.search(r"\bRCL_LOCK_SITE(?:_VOID)?\s*\(\s*$", code[: m.start()]) or not pairs:
            continue  # wrapped already; or its locks have no init ids (left with the helper's entry)
        wrap = "RCL_LOCK_SITE_VOID" if call.helper.returns_void else "RCL_LOCK_SITE"
        sites_text = ", ".join(f'RCL_SITE("{init}", {macro})' for init, macro in pairs)
        edits.append((m.start(), found[1], f"{wrap}({text[m.start():found[1]]}, {sites_text})"))
    notes = [f"{file}:{call.line}: {call.called} not found again after extraction: its lock "
             f"keeps the configuration of the helper's own init site" for call, _ in pending]
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text, notes
