"""Locks kept as pthread mutexes where rclify can: the program calls a robust or priority-ceiling
function on them (KEEP_APIS: pthread_mutex_consistent, _consistent_np, _getprioceiling,
_setprioceiling), so it relies on pthread's own behaviour of that lock; kept apart, nothing of
rclify's is between the program and it.

Such a lock stays a `pthread_mutex_t`: its definition, extern declarations or struct field keep
their type and initializer, every pthread call on it (init, lock, unlock, destroy, the call that
made it stay) stays a pthread call, its regions are left hybrid (Reason.LOCK_KEPT_POSIX) and it
gets no lock_config.h entry.  A condition variable waited on with it stays a `pthread_cond_t`
too, with all its calls.  The report lists them (`locks_kept_posix`).

How: a lock is known by its name, a variable (global, file static or function-local) or a struct
field, and the API rewrite does not see it: before the semantic patches run, mask() turns the
`pthread_` / `PTHREAD_` of its declarations, initializers and calls into `rclkeep_` /
`RCLKEEP_` (same length, so positions do not move) and unmask() puts them back after the text
pass.  A name says which lock an expression is only under conditions, checked here for every
kept lock and condition variable:
  * every mention of the name is a declaration of it (one name per declaration) or the lock (or
    condition) argument of a direct pthread call: it does not escape through a pointer, a
    function's parameter (a wrapper taking the mutex), a macro argument or a struct initializer;
  * no other lock or field has the name where it is visible (a field name used by one struct only).
When a lock fails them (or the call names no lock definition: a pointer, a parameter, a cast of
shared memory as apr's proc mutexes are), it is not kept apart: it is an rcl_mutex_t like the
others, and its calls become the runtime's rcl_mutex_consistent / rcl_mutex_{get,set}prioceiling,
which run on the lock's pthread mutex (a robust or priority-protocol mutex always runs posix,
whatever its configuration).  Its regions (by the calls' argument, or by its name) stay lock and
unlock calls (Reason.LOCK_KEPT_POSIX), whose results (EOWNERDEAD) the program reads; an extracted
section on another expression of the same lock, which the analysis cannot see, stops the program
with a message if its owner died (rcl_execute_lock_failed), never silently.  (One such call used to
leave every file sharing a header with it unchanged: all of apr.)
"""

import re
from collections import defaultdict
from dataclasses import dataclass, field

from rclify import pthread_api
from rclify.ctext.tokens import code_only, iter_tokens
from rclify.lock_identity.discovered_sites import Discovery
from rclify.lock_identity.lock_table import LockTable, last_member, normalize

KEEP_APIS = pthread_api.KEEP_POSIX
MASK, UNMASK = ("pthread_", "PTHREAD_"), ("rclkeep_", "RCLKEEP_")
_CALL = re.compile(r"\bpthread_(mutex|cond)_(\w+)\s*\(")
_WAITS = ("wait", "timedwait", "clockwait")
_DECLARATION = re.compile(r"\bpthread_(mutex|cond)_t\s+([A-Za-z_]\w*)")
_INITIALIZER = re.compile(r"\bPTHREAD_\w*(?:MUTEX|COND)_INITIALIZER")


@dataclass
class Kept:
    """A lock (or condition variable) kept posix, known by its name."""

    name: str
    member: bool  # a struct field: matches the last member of an expression (`p->lock`)
    cond: bool = False  # a condition variable waited on with a kept lock
    file: str = ""  # a static or function-local one: the file it is visible in ('' everywhere)
    function: str = ""  # a function-local one
    lock_ids: list[str] = field(default_factory=list)
    because: list[str] = field(default_factory=list)  # 'file:line: pthread_mutex_consistent(&m)'

    def names(self, expr: str, file: str) -> bool:
        """Does expr (a call's argument as written, in file) denote this lock?"""
        norm = normalize(expr)
        if self.member:
            return last_member(norm) == self.name
        if self.file and file != self.file:
            return False
        return re.fullmatch(rf"{re.escape(self.name)}(\[\])?", norm) is not None

    def visible_in(self, file: str) -> bool:
        return not self.file or self.file == file

    def record(self) -> dict:
        return {"name": self.name, "kind": "cond" if self.cond else "mutex",
                "field": self.member, "file": self.file, "function": self.function,
                "lock_ids": self.lock_ids, "because": self.because}


@dataclass
class KeptPosix:
    kept: list[Kept] = field(default_factory=list)
    # locks that could not be kept apart: rcl_mutex_t like the others, their calls the runtime's
    # (rcl_mutex_consistent...), their regions hybrid: (the lock when it has a name, the calls'
    # arguments normalized, 'file:line: call' each)
    on_runtime: list[tuple[Kept, set[str], list[str]]] = field(default_factory=list)

    @property
    def lock_ids(self) -> set[str]:
        return {i for k in self.kept for i in k.lock_ids}

    def keeps(self, expr: str, file: str) -> Kept | None:
        """The kept lock a mutex expression denotes, if any."""
        return next((k for k in self.kept if not k.cond and k.names(expr, file)), None)

    def refusal(self, file: str, function: str, lock_expr: str, text: str) -> str:
        """Why a region stays hybrid for a kept lock ('' when it does not): its lock is kept, or is
        one not kept apart whose robust or ceiling calls the program makes, or it uses a kept
        function-local lock (whose capture into an extracted section would be retyped)."""
        for lock, exprs, where in self.on_runtime:
            if normalize(lock_expr) in exprs or lock.name and lock.names(lock_expr, file):
                return (f"the program calls {'; '.join(where)} on this lock, and reads what its lock calls return "
                        "(EOWNERDEAD): they stay calls, on the runtime's rcl_mutex_t")
        lock = self.keeps(lock_expr, file)
        if lock is not None:
            return f"the lock is kept a pthread mutex ({'; '.join(lock.because)})"
        for k in self.kept:
            if k.function == function and k.file == file and re.search(rf"\b{re.escape(k.name)}\b", text):
                return f"the region uses {k.name}, a function-local lock kept a pthread mutex"
        return ""

    def mask(self, text: str, file: str) -> str:
        """text with the pthread declarations, initializers and calls of kept locks hidden from
        the API rewrite (pthread_ -> rclkeep_, PTHREAD_ -> RCLKEEP_: same length)."""
        here = [k for k in self.kept if k.visible_in(file)]
        if not here or "rclkeep_" in text or "RCLKEEP_" in text:
            return text
        code = code_only(text)
        spots: list[int] = []
        for m in _CALL.finditer(code):
            found = _argument_spans(code, m.end() - 1)
            if found is None:
                continue
            mutex, cond = _roles(m.group(1), m.group(2), [code[s:e] for s, e in found])
            if (mutex and any(not k.cond and k.names(mutex, file) for k in here)) or \
                    (cond and any(k.cond and k.names(cond, file) for k in here)):
                spots.append(m.start())
        for m in _DECLARATION.finditer(code):
            if not any(k.name == m.group(2) and k.cond == (m.group(1) == "cond") for k in here):
                continue
            spots.append(m.start())
            spots += [i.start() for i in _INITIALIZER.finditer(code, m.end(), _declaration_end(code, m.end()))]
        out = list(text)
        for at in spots:
            prefix = text[at : at + 8]
            if prefix in MASK:
                out[at : at + 8] = UNMASK[MASK.index(prefix)]
        return "".join(out)

    @staticmethod
    def unmask(text: str) -> str:
        return re.sub(r"\bRCLKEEP_", "PTHREAD_", re.sub(r"\brclkeep_", "pthread_", text))


# -- reading the code ------------------------------------------------------------------------------

def _argument_spans(code: str, open_at: int) -> list[tuple[int, int]] | None:
    """(start, end) of each argument (blanks trimmed) of the call whose `(` is at open_at."""
    spans, depth, start = [], 0, open_at + 1
    for tok in iter_tokens(code, open_at):
        if tok.text in ("(", "[", "{"):
            depth += 1
        elif tok.text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                if code[start : tok.start].strip() or spans:
                    spans.append(_trimmed(code, start, tok.start))
                return spans
        elif tok.text == "," and depth == 1:
            spans.append(_trimmed(code, start, tok.start))
            start = tok.end
    return None


def _trimmed(code: str, start: int, end: int) -> tuple[int, int]:
    while start < end and code[start].isspace():
        start += 1
    while end > start and code[end - 1].isspace():
        end -= 1
    return start, end


def _roles(family: str, op: str, args: list[str]) -> tuple[str, str]:
    """(the mutex argument, the condition variable argument) of a pthread_<family>_<op> call."""
    if family == "mutex":
        return (args[0] if args else ""), ""
    return (args[1] if op in _WAITS and len(args) > 1 else ""), (args[0] if args else "")


def _declaration_end(code: str, at: int) -> int:
    """Offset of the `;` ending the declaration going on at `at` (or of the `)` / `}` closing
    what holds it: a parameter list, a struct)."""
    depth = 0
    for i in range(at, len(code)):
        ch = code[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return i
        elif ch == ";" and depth == 0:
            return i
    return len(code)


@dataclass
class _Call:
    line: int
    function: str
    mutex: tuple[int, int] | None  # span of the mutex argument
    cond: tuple[int, int] | None  # span of the condition variable argument


def _calls(code: str, functions: dict[int, str]) -> list[_Call]:
    out = []
    for m in _CALL.finditer(code):
        spans = _argument_spans(code, m.end() - 1)
        if not spans:
            continue
        line = code.count("\n", 0, m.start()) + 1
        if m.group(1) == "mutex":
            out.append(_Call(line, functions.get(line, ""), spans[0], None))
        else:
            waits = m.group(2) in _WAITS and len(spans) > 1
            out.append(_Call(line, functions.get(line, ""), spans[1] if waits else None, spans[0]))
    return out


def _is_member(code: str, at: int) -> bool:
    before = code[:at].rstrip()
    return before.endswith(".") or before.endswith("->")


# -- deciding ------------------------------------------------------------------------------------

def find_kept_posix(texts: dict[str, str], discovery: Discovery, table: LockTable) -> KeptPosix:
    """The locks (and condition variables) that stay pthread ones, and those that could not be
    kept on their own (on_runtime).  Zero-initialised kept locks lose their id
    initializer (LockSite.zero_init): they are not rclify locks.  texts: the tree's, by relative path."""
    triggers = [s for s in discovery.of_kind("other_mutex_api") if s.api in KEEP_APIS]
    result = KeptPosix()
    if not triggers:
        return result
    codes = {f: code_only(text) for f, text in texts.items()}
    functions: dict[str, dict[int, str]] = defaultdict(dict)
    for site in discovery.sites:
        functions[site.file].setdefault(site.line, site.function)
    calls = {f: _calls(code, functions[f]) for f, code in codes.items() if "pthread_" in code}
    failed: list[tuple[Kept, set[str], list[str]]] = []  # (lock, its calls' arguments, where they are)

    locks: list[Kept] = []
    for trigger in triggers:
        where = f"{trigger.file}:{trigger.line}: {trigger.api}({', '.join(trigger.args)})"
        lock, why = _lock_of(trigger, table, discovery)
        if why:  # a name that is no lock (a pointer, a parameter, a cast): the runtime's calls
            failed.append((Kept("", False), {normalize(trigger.expr)}, [where]))
            continue
        same = next((k for k in locks if (k.name, k.member, k.file, k.function) ==
                     (lock.name, lock.member, lock.file, lock.function)), None)
        (same or lock).because.append(where)
        if same is None:
            locks.append(lock)

    checker = _Checker(codes, calls, table, discovery)
    for lock in locks:
        why = checker.problem(lock, locks)
        conds = [] if why else checker.conds_of(lock, locks)
        for cond in conds:
            why = why or checker.problem(cond, locks)
        if why:
            failed.append((lock, {normalize(t.expr) for t in triggers if lock.names(t.expr, t.file)}, lock.because))
            continue
        result.kept.append(lock)
        for cond in conds:
            if not any((c.name, c.member) == (cond.name, cond.member) for c in result.kept if c.cond):
                result.kept.append(cond)
    for lock, exprs, where in failed:
        # not kept apart, not frozen either (one such call left whole libraries unchanged): the lock
        # is an rcl_mutex_t, whose robust or ceiling calls the runtime runs on its pthread mutex (a
        # robust or priority-protocol mutex always runs posix); its regions stay lock/unlock calls
        result.on_runtime.append((lock, exprs, where))
    for site in table.sites:  # every site of a kept lock (a field's struct variables too): no rclify id
        lock = next((k for k in result.kept if not k.cond and (site.lock_id in k.lock_ids or
                                                                k.names(site.normalized, site.file))), None)
        if lock is not None:
            site.zero_init = ""
            if site.lock_id not in lock.lock_ids:
                lock.lock_ids.append(site.lock_id)
    return result


def _lock_of(trigger, table: LockTable, discovery: Discovery) -> tuple[Kept, str]:
    """The lock a pthread_mutex_consistent-like call names, and '' or why it cannot be kept."""
    norm = normalize(trigger.expr)
    variable = re.fullmatch(r"([A-Za-z_]\w*)(\[\])?", norm)
    if variable:
        name = variable.group(1)
        site = table.variable(name, trigger.file, trigger.function)
        if site is None:
            return Kept(name, False), f"{name} is not a mutex definition rclify knows (a pointer, a parameter?)"
        definition = site.sites[0] if site.sites else None
        local = bool(site.function) or (definition is not None and definition.static and not site.file.endswith(".h"))
        return Kept(name, False, file=site.file if local else "", function=site.function, lock_ids=[site.lock_id]), ""
    member = last_member(norm)
    if not member:
        return Kept("", False), "the argument names no variable or struct field"
    fields = [s for s in discovery.of_kind("mutex_var") if s.scope not in ("file", "function") and s.expr == member]
    if len(fields) != 1:
        return Kept(member, True), (f"{len(fields)} struct fields are named {member}" if fields else
                                    f"no pthread_mutex_t struct field named {member} was found")
    ids = sorted(s.lock_id for s in table.sites if s.kind == "mutex_init" and last_member(s.normalized) == member)
    return Kept(member, True, lock_ids=ids), ""


def _mentions(code: str, name: str, member: bool) -> bool:
    return bool(name) and any(_is_member(code, m.start()) == member
                              for m in re.finditer(rf"\b{re.escape(name)}\b", code))


class _Checker:
    """Whether a name says which lock (or condition variable) an expression is: see the module."""

    def __init__(self, codes: dict[str, str], calls: dict[str, list[_Call]], table: LockTable, discovery: Discovery):
        self.codes, self.calls, self.table, self.discovery = codes, calls, table, discovery

    def problem(self, k: Kept, locks: list[Kept]) -> str:
        clash = self._clash(k)
        if clash:
            return clash
        for file, code in self.codes.items():
            if not k.visible_in(file):
                continue
            for m in re.finditer(rf"\b{re.escape(k.name)}\b", code):
                if _is_member(code, m.start()) != k.member:
                    continue
                why = self._mention(k, file, code, m.start(), locks)
                if why:
                    line = code.count("\n", 0, m.start()) + 1
                    return f"{file}:{line}: {why}"
        return ""

    def _clash(self, k: Kept) -> str:
        """Another lock or field with k's name where k is visible."""
        if k.cond:
            return ""
        fields = [s for s in self.discovery.of_kind("mutex_var") if s.scope not in ("file", "function") and s.expr == k.name]
        variables = [s for s in self.table.sites if s.is_variable and s.base == k.name and s.lock_id not in k.lock_ids
                     and (not k.file or s.file == k.file or not s.file.endswith(".c") or (not s.function and not k.file))]
        if k.member:
            if variables:
                return f"a mutex variable is also named {k.name} ({variables[0].lock_id})"
            return ""
        if fields:
            return f"a struct field is also named {k.name} ({fields[0].file}:{fields[0].line})"
        if variables:
            return f"another mutex is also named {k.name} ({variables[0].lock_id})"
        return ""

    def _mention(self, k: Kept, file: str, code: str, at: int, locks: list[Kept]) -> str:
        """'' when the mention at `at` is k's declaration or a pthread call's argument for it."""
        for call in self.calls.get(file, []):
            span = call.cond if k.cond else call.mutex
            if span is None or not (span[0] <= at < span[1]):
                continue
            if not k.names(code[span[0] : span[1]], file):
                return f"{code[span[0]:span[1]]} is not the plain {k.name} in a pthread call"
            if k.function and call.function != k.function:
                return f"{k.name} is named in {call.function or 'a macro'}(), not {k.function}()"
            if k.cond and call.mutex is not None:
                mutex = code[call.mutex[0] : call.mutex[1]]
                if not any(lock.names(mutex, file) for lock in locks if not lock.cond):
                    return f"{k.name} is also waited on with {mutex}, which is not kept"
            return ""
        kind = "cond" if k.cond else "mutex"
        if re.search(rf"\bpthread_{kind}_t\s*$", code[max(0, at - 200) : at]):
            end = _declaration_end(code, at)
            if code[end : end + 1] != ";":
                return f"{k.name} is a parameter or an unterminated declaration"
            depth = 0
            for ch in code[at:end]:
                depth += ch in "([{"
                depth -= ch in ")]}"
                if ch == "," and depth == 0:
                    return f"{k.name} is declared together with other names"
            return ""
        text = code[code.rfind("\n", 0, at) + 1 : code.find("\n", at)].strip()
        return f"{k.name} is used other than as a pthread call's argument or in its declaration: `{text}`"

    def conds_of(self, lock: Kept, locks: list[Kept]) -> list[Kept]:
        """The condition variables waited on with lock: they stay pthread_cond_t too."""
        out: list[Kept] = []
        for file, calls in self.calls.items():
            code = self.codes[file]
            for call in calls:
                if call.cond is None or call.mutex is None or not lock.names(code[call.mutex[0] : call.mutex[1]], file):
                    continue
                norm = normalize(code[call.cond[0] : call.cond[1]])
                variable = re.fullmatch(r"([A-Za-z_]\w*)(\[\])?", norm)
                name, member = (variable.group(1), False) if variable else (last_member(norm), True)
                if not any((c.name, c.member) == (name, member) for c in out):
                    out.append(Kept(name, member, cond=True, because=[f"{file}:{call.line}: waited on with {lock.name}"]))
        return out
