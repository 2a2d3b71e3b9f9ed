"""Helpers for the script:python rules of rclify's semantic patches.

spatch runs these rules with its own embedded Python; rclify puts this folder (and the project root)
on PYTHONPATH.  Used by hand:

    PYTHONPATH=semantic_patches/lib:. spatch --sp-file semantic_patches/discover/pthread_sites.cocci -D report file.c

Two output modes, chosen by the patch's `virtual` rules:
  report  one human-readable line per match: file:line:column: kind: text
  json    one line per match, "RCLIFY-JSON " + a JSON object, read by rclify/discover.py and
          rclify/api_rewrite.py
Positions are spatch's: 1-based lines, 0-based columns.
"""

import json
import os
import re
import sys

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
    if at >= len(src) or src[at] != "(":
        return name, [], at
    args, depth, begin, at = [], 0, at + 1, at
    quote = None
    while at < len(src):
        ch = src[at]
        if quote:
            if ch == "\\":
                at += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append(src[begin:at])
                break
        elif ch == "," and depth == 1:
            args.append(src[begin:at])
            begin = at + 1
        at += 1
    args = [squash(a) for a in args]
    if args == [""]:
        args = []
    return name, args, at + 1


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
