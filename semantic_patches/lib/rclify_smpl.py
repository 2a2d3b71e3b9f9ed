"""Helpers for the script:python rules of rclify's semantic patches.

spatch runs these rules with its own embedded Python; rclify puts this folder (and the project root)
on PYTHONPATH.  Used by hand:

    PYTHONPATH=semantic_patches/lib:. spatch --sp-file semantic_patches/discover/pthread_sites.cocci -D report file.c

Two output modes, chosen by the patch's `virtual` rules:
  report  one human-readable line per match: file:line:column: kind: text
  json    one line per match, "RCLIFY-JSON " + a JSON object, read by rclify/ctext/spatch.py
Positions are spatch's: 1-based lines, 0-based columns.
"""

import json
import os
import re
import sys

from rclify.ctext.tokens import call_arguments  # the project root is on PYTHONPATH too

MODE = "report"
_LINES = {}


def set_mode(mode):
    global MODE
    MODE = mode


def lines(path):
    """The file's lines (cached): spatch positions index into them."""
    if path not in _LINES:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            _LINES[path] = handle.read().split("\n")
    return _LINES[path]


def offset(path, line, column):
    return sum(len(text) + 1 for text in lines(path)[: line - 1]) + column


def text(path):
    return "\n".join(lines(path))


def call_at(path, line, column):
    """(name, [arguments as written], end offset) of the call whose callee starts at line:column."""
    src = text(path)
    start = offset(path, line, column)
    name = re.match(r"\w+", src[start:])
    name = name.group(0) if name else ""
    at = start + len(name)
    while at < len(src) and src[at] in " \t\n\\":
        at += 1
    found = call_arguments(src, at) if at < len(src) and src[at] == "(" else None
    if found is None:
        return name, [], at
    args, end = found
    return name, [squash(a) for a in args], end


def squash(code):
    """Code as written, with line continuations and runs of blanks folded to one space."""
    return re.sub(r"\s+", " ", code.replace("\\\n", " ")).strip()


def function_of(pos):
    """The enclosing function's name, '' at file scope or in a macro body.

    spatch's current_element is the function for code in a function; at file scope it is the
    declared name or 'something_else'; callers that know the declared name pass it to compare.
    """
    element = pos.current_element
    return "" if element == "something_else" else element


def emit(kind, pos, **fields):
    record = {"kind": kind, "file": pos.file, "line": int(pos.line), "column": int(pos.column)}
    record.update(fields)
    if MODE == "json":
        sys.stdout.write("RCLIFY-JSON " + json.dumps(record) + "\n")
    else:
        detail = fields.get("text") or fields.get("name") or ""
        extra = fields.get("message")
        sys.stdout.write(f"{pos.file}:{pos.line}:{pos.column}: {kind}: {detail}" + (f" ({extra})" if extra else "") + "\n")
    sys.stdout.flush()


def env_json(name, default=None):
    """A JSON document named by an environment variable (a path), for data rclify hands a patch."""
    path = os.environ.get(name)
    if not path:
        return default
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
