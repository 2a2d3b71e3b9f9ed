"""Mutexes that live inside file-scope struct variables: `static struct table tbl = { .lock =
PTHREAD_MUTEX_INITIALIZER };`, `struct stats stats;` (zero-initialised), `static struct node
nodes[4] = { { PTHREAD_MUTEX_INITIALIZER, ... }, ... };`, `static struct { pthread_mutex_t m; ... }
s = ...;`.  Discovery sees the struct's fields, not these instances; without them such a lock has
no lock_config.h entry and runs anonymous.

Read from the text (comments and strings blanked): each top-level declaration of one variable
whose type is a struct (by tag, by typedef name, or written inline) with `pthread_mutex_t` fields
(scalar ones).  For each such field, the instance is `name.field` (`name[].field` for an array of
structs) and is
  * static: the initializer gives the field a PTHREAD_*MUTEX_INITIALIZER*, by designator
    (`.field = ...`) or by position when the struct has no other mutex field (api/initializers.cocci
    then writes the id into it);
  * zero: there is no initializer, or it leaves the field out (a constructor sets the id).
Declarations inside functions, of several names, of struct arrays inside structs, and mutex
arrays inside structs are not read.  A struct type is read where the file can see it: in the file
or a header it includes (fio's init.c `static struct thread_data def_thread;` is fio.h's struct,
without a mutex, not the one of the same tag that t/read-to-pipe-async.c defines with two).
"""

import re
from dataclasses import dataclass

from rclify.ctext.tokens import code_only
from rclify.ctext.tree_macros import expand_storage, storage_classes
from rclify.ctext.includes import IncludeGraph

_INIT_TOKEN = re.compile(r"\bPTHREAD_\w*MUTEX_INITIALIZER\w*")
_FIELD = re.compile(r"\bpthread_mutex_t\s+([A-Za-z_]\w*)\s*;")
_HEAD = re.compile(r"\s*((?:(?:static|extern|const|volatile)\s+)*)(?:(struct)\s+([A-Za-z_]\w*)?\s*|([A-Za-z_]\w*)\s+)")
_DECLARATOR = re.compile(r"\s*([A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*(?:=\s*(\{.*\}))?\s*$", re.S)


@dataclass(frozen=True)
class StructLock:
    file: str
    line: int
    variable: str
    field: str
    array: bool  # an array of structs: every element's field is one lock site
    static: bool  # declared static
    initialized: bool  # the initializer gives the field a PTHREAD_*MUTEX_INITIALIZER*

    @property
    def normalized(self) -> str:
        return f"{self.variable}{'[]' if self.array else ''}.{self.field}"


def _matching(code: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(code)):
        depth += code[i] == "{"
        depth -= code[i] == "}"
        if depth == 0:
            return i
    return -1


def _top_level(code: str):
    """(start, end) of each top-level declaration (up to its `;`); function bodies are skipped."""
    depth, start, i = 0, 0, 0
    while i < len(code):
        ch = code[i]
        if ch == "{" and depth == 0 and _after_parenthesis(code, i):
            close = _matching(code, i)  # a function body
            if close < 0:
                return
            i = start = close + 1
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == ";" and depth == 0:
            yield start, i
            start = i + 1
        i += 1


def _after_parenthesis(code: str, at: int) -> bool:
    j = at - 1
    while j >= 0 and code[j].isspace():
        j -= 1
    return j >= 0 and code[j] == ")"


def _without_directives(text: str) -> str:
    return re.sub(r"^[ \t]*#.*?(?<!\\)$", lambda m: " " * len(m.group(0)), text, flags=re.M | re.S)


def _mutex_fields(body: str) -> list[str]:
    """The scalar pthread_mutex_t fields of a struct body (its own level only)."""
    depth, flat = 0, []
    for ch in body:
        depth += ch == "{"
        flat.append(ch if depth == 0 else " ")
        depth -= ch == "}"
    return _FIELD.findall("".join(flat))


def struct_types(codes: dict[str, str]) -> dict[str, list[str]]:
    """{'struct tag' or typedef name: its scalar pthread_mutex_t fields} over every file."""
    out: dict[str, list[str]] = {}
    for code in codes.values():
        for m in re.finditer(r"\b(typedef\s+)?struct\s+([A-Za-z_]\w*)?\s*\{", code):
            close = _matching(code, m.end() - 1)
            if close < 0:
                continue
            fields = _mutex_fields(code[m.end() : close])
            if not fields:
                continue
            if m.group(2):
                out[f"struct {m.group(2)}"] = fields
            if m.group(1):
                name = re.match(r"\s*([A-Za-z_]\w*)\s*;", code[close + 1 :])
                if name:
                    out[name.group(1)] = fields
        for m in re.finditer(r"\btypedef\s+struct\s+([A-Za-z_]\w*)\s+([A-Za-z_]\w*)\s*;", code):
            if f"struct {m.group(1)}" in out:
                out[m.group(2)] = out[f"struct {m.group(1)}"]
    return out


def struct_locks(texts: dict[str, str], includes: IncludeGraph | None = None) -> list[StructLock]:
    """Every mutex field of every file-scope struct variable of the tree (see the module).
    includes: the include graph of texts' files by base name (the pipeline's; else built here)."""
    storage = storage_classes(texts)  # `local lock l = {...}` with pigz's `#define local static`
    # a file's code is read only where its text names what is looked for: blanking comments,
    # strings and directives and expanding storage macros adds no name (most files name none)
    codes = {f: expand_storage(_without_directives(code_only(t)), storage) for f, t in texts.items()
             if "pthread_mutex_t" in t}
    own = {f: struct_types({f: code}) for f, code in codes.items()}  # no mutex field in the others
    visible = _visible_types(includes or IncludeGraph.by_base_name_of(texts), own)
    names = sorted({key.split()[-1] for types in own.values() for key in types})
    # one alternation for all the tree's struct type names: a search each per file was a second on memcached
    any_name = re.compile(rf"\b(?:{'|'.join(map(re.escape, names))})\b") if names else None
    found = []
    for file, text in sorted(texts.items()):
        if "pthread_mutex_t" not in text and not (any_name is not None and any_name.search(text)):
            continue
        code = codes.get(file) or expand_storage(_without_directives(code_only(text)), storage)
        if "pthread_mutex_t" not in code and not (any_name is not None and any_name.search(code)):
            continue
        types = visible(file)
        for start, end in _top_level(code):
            found += _declaration(file, code, start, end, types)
    return found


def _visible_types(includes: IncludeGraph, own: dict[str, dict[str, list[str]]]):
    """A function of a file: the struct types of it and of the tree's headers it includes, through
    any chain of them (includes: by base name, as the tree's other include readers do)."""

    def visible(file: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for f in sorted(includes.closure(file)):
            out.update(own.get(f, {}))
        out.update(own.get(file, {}))  # the file's own definitions win
        return out

    return visible


def _declaration(file: str, code: str, start: int, end: int, types: dict[str, list[str]]) -> list[StructLock]:
    text = code[start:end]
    head = _HEAD.match(text)
    if head is None or "extern" in head.group(1).split() or "typedef" in text.split():
        return []
    rest = head.end()
    if head.group(2):  # struct [tag] [{ body }]
        if text[rest : rest + 1] == "{":
            close = _matching(text, rest)
            if close < 0:
                return []
            fields = _mutex_fields(text[rest + 1 : close])
            rest = close + 1
        else:
            fields = types.get(f"struct {head.group(3)}", [])
    else:
        fields = types.get(head.group(4), [])
    declarator = _DECLARATOR.match(text[rest:])
    if not fields or declarator is None:
        return []
    name, array, init = declarator.group(1), bool(declarator.group(2)), declarator.group(3) or ""
    line = code.count("\n", 0, start + rest + declarator.start(1)) + 1
    static = "static" in head.group(1).split()
    designated = re.search(r"(?<![\w.])\.\s*[A-Za-z_]\w*\s*=", init) is not None
    out = []
    for field in fields:
        if designated:
            initialized = re.search(rf"\.\s*{field}\s*=\s*PTHREAD_\w*MUTEX_INITIALIZER", init) is not None
        else:
            initialized = len(fields) == 1 and _INIT_TOKEN.search(init) is not None
        out.append(StructLock(file, line, name, field, array, static, initialized))
    return out
