"""Lock ids: one per lock allocation site, stable across runs.

Allocation sites, from a Discovery:
  static_mutex / mutex_var definitions  'file.c:name', function-local 'file.c:func:name',
                                         arrays 'file.c:name[]'
  mutex_init call sites                  'file.c:' + the initialised expression, normalised:
                                         '&me->notify_lock' -> 'thread.c:me->notify_lock',
                                         '&item_locks[i]'   -> 'thread.c:item_locks[]'
A mutex_init of a defined variable (`static pthread_mutex_t m; ... pthread_mutex_init(&m, NULL)`,
also through `extern` from another file) is the same site as the definition.  Two different sites
that would get one id are told apart by '#2', '#3' (in line order): ids carry no line numbers
otherwise.  Struct fields (mutex_var sites with scope 'struct ...') are not allocation sites: the
mutex_init calls on them are.
"""

import re
from collections import defaultdict
from dataclasses import dataclass, field

from rclify.ctext.tokens import balanced
from rclify.transform.discover import Discovery, Site
from rclify.lock_config import LockEntry, macro_suffix


@dataclass
class LockSite:
    lock_id: str
    kind: str  # 'static_mutex' | 'mutex_var' | 'mutex_init'
    file: str
    line: int
    function: str
    expr: str  # as written: the defined name, or mutex_init's first argument
    normalized: str  # expression without '&', blanks, redundant parentheses; subscripts as []
    sites: list[Site] = field(default_factory=list)  # the definition and/or the init calls

    @property
    def macro(self) -> str:
        return "RCLIFY_LOCK_" + macro_suffix(self.lock_id)

    @property
    def base(self) -> str:
        """The variable a lock expression starts from ('item_locks' for item_locks[])."""
        m = re.match(r"[A-Za-z_]\w*", self.normalized)
        return m.group(0) if m else ""

    @property
    def is_variable(self) -> bool:
        return self.kind in ("static_mutex", "mutex_var")

    def entry(self) -> LockEntry:
        where = f"{self.file}:{self.line}" + (f" in {self.function}()" if self.function else "")
        what = {"static_mutex": "static initializer", "mutex_var": "definition", "mutex_init": "pthread_mutex_init"}
        return LockEntry(self.lock_id, description=f"{self.expr}; {what[self.kind]} at {where}")


def normalize(expr: str) -> str:
    """'&(c->thread->stats.mutex)' -> 'c->thread->stats.mutex'; '&item_locks[i % N]' -> 'item_locks[]'."""
    text = re.sub(r"\s+", "", expr)
    text = re.sub(r"^\((?:const)?(?:pthread_mutex_t|rcl_mutex_t)\*\)", "", text)  # a cast to the lock type
    changed = True
    while changed:
        before = text
        if text.startswith("&"):
            text = text[1:]
        if text.startswith("(") and text.endswith(")") and balanced(text[1:-1]):
            text = text[1:-1]
        text = re.sub(r"^\*\(?([A-Za-z_]\w*)\)?\+(\w+)$", r"\1[]", text)  # *(a + i) / *a+i
        changed = text != before
    text = _blank_subscripts(text)
    text = re.sub(r"\(([A-Za-z_]\w*)\)", r"\1", text)  # (p)->f -> p->f
    return text


def _blank_subscripts(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        if ch == "[":
            if depth == 0:
                out.append("[")
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                out.append("]")
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def last_member(normalized: str) -> str:
    parts = re.split(r"\.|->", normalized)
    return parts[-1].rstrip("[]") if len(parts) > 1 else ""


class LockTable:
    """The lock sites of a program, and the mapping of lock expressions onto them."""

    def __init__(self, sites: list[LockSite]):
        self.sites = sites
        self.by_id = {s.lock_id: s for s in sites}

    # -- hand-over to the rewrite patches (spatch's Python reads it back) --------------------------

    def to_json(self) -> list[dict]:
        return [{"lock_id": s.lock_id, "kind": s.kind, "file": s.file, "line": s.line, "function": s.function,
                 "expr": s.expr, "normalized": s.normalized} for s in self.sites]

    @classmethod
    def from_json(cls, rows: list[dict]) -> "LockTable":
        return cls([LockSite(**row) for row in rows])

    def for_init(self, expr: str, file: str, function: str) -> LockSite | None:
        """The site of a pthread_mutex_init(expr, ...) call in file/function."""
        norm = normalize(expr)
        inits = [s for s in self.sites if s.kind == "mutex_init" and s.file == file and s.normalized == norm]
        for group in ([s for s in inits if s.function == function], inits):
            if group:
                return group[0]
        base = re.fullmatch(r"([A-Za-z_]\w*)(\[\])?", norm)
        return self.variable(base.group(1), file, function) if base else None

    def for_initializer(self, file: str, element: str, source: str, offset: int) -> LockSite | None:
        """The definition a static initializer at offset of source belongs to.

        element is spatch's current_element there: the defined name for a lone file-scope
        definition, the function for a function-local one, 'something_else' for a file-scope
        declaration of several names.  Among the candidates, the name written last before the
        initializer with no ';' in between wins.
        """
        statics = [s for s in self.sites if s.is_variable and s.file == file]
        for site in statics:
            if not site.function and site.base == element:
                return site
        candidates = [s for s in statics if s.function == element] or [s for s in statics if not s.function]
        best, best_at = None, -1
        for site in candidates:
            for m in re.finditer(rf"\b{re.escape(site.base)}\b", source[:offset]):
                if ";" not in source[m.end():offset] and m.start() > best_at:
                    best, best_at = site, m.start()
        return best

    def entries(self) -> list[LockEntry]:
        return [s.entry() for s in self.sites]

    def variable(self, name: str, file: str, function: str) -> LockSite | None:
        """The definition a plain variable name refers to: local, then file scope, then another
        file's global (a unique one)."""
        for site in self.sites:
            if site.is_variable and site.file == file and site.function == function and site.function and site.base == name:
                return site
        for site in self.sites:
            if site.is_variable and site.file == file and not site.function and site.base == name:
                return site
        others = [s for s in self.sites if s.is_variable and not s.function and s.base == name]
        return others[0] if len(others) == 1 else None

    def match_lock(self, expr: str, file: str, function: str) -> str | None:
        """Best effort: the lock id a region's lock expression refers to, or None.

        Same variable for (arrays of) globals and locals; otherwise the same normalised expression
        initialised in the same file, then the same last member name (`&c->thread->stats.mutex`
        matches the site `threads[].stats.mutex`): same file first, a unique one elsewhere.
        """
        norm = normalize(expr)
        if not norm:
            return None
        if re.fullmatch(r"[A-Za-z_]\w*(\[\])?", norm):
            site = self.variable(norm.rstrip("[]"), file, function)
            if site:
                return site.lock_id
        same = [s for s in self.sites if s.normalized == norm]
        for group in ([s for s in same if s.file == file and s.function == function], [s for s in same if s.file == file], same):
            if group:
                return group[0].lock_id
        member = last_member(norm)
        if member:
            named = [s for s in self.sites if last_member(s.normalized) == member]
            in_file = [s for s in named if s.file == file]
            if in_file:
                return in_file[0].lock_id
            if named and len({s.lock_id for s in named}) == 1:
                return named[0].lock_id
            if named:
                return sorted(named, key=lambda s: s.lock_id)[0].lock_id
        return None


def build_lock_table(discovery: Discovery) -> LockTable:
    """One LockSite per allocation site of the discovery, with unique stable ids."""
    sites: list[LockSite] = []
    for site in discovery.sites:
        if site.kind not in ("static_mutex", "mutex_var") or site.scope.startswith("struct") or site.scope not in ("file", "function"):
            continue
        name = site.expr + ("[]" if site.array else "")
        lock_id = f"{site.file}:{site.function + ':' if site.function else ''}{name}"
        sites.append(LockSite(lock_id, site.kind, site.file, site.line, site.function, site.expr, name, sites=[site]))
    table = LockTable(sites)

    # mutex_init calls: the definition's site when they initialise a defined variable
    pending: dict[str, list[tuple[Site, str]]] = defaultdict(list)
    for site in discovery.sites:
        if site.kind != "mutex_init":
            continue
        norm = normalize(site.expr)
        base = re.fullmatch(r"([A-Za-z_]\w*)(\[\])?", norm)
        owner = table.variable(base.group(1), site.file, site.function) if base else None
        if owner:
            owner.sites.append(site)
            continue
        pending[f"{site.file}:{norm}"].append((site, norm))
    for lock_id, group in sorted(pending.items()):
        group.sort(key=lambda item: (item[0].line, item[0].column))
        for n, (site, norm) in enumerate(group, 1):
            unique = lock_id if n == 1 else f"{lock_id}#{n}"
            sites.append(LockSite(unique, "mutex_init", site.file, site.line, site.function, site.expr, norm, sites=[site]))

    sites.sort(key=lambda s: s.lock_id)
    seen: dict[str, int] = {}
    for site in sites:  # definitions can collide too (two function-local statics of one name)
        if site.lock_id in seen:
            seen[site.lock_id] += 1
            site.lock_id = f"{site.lock_id}#{seen[site.lock_id]}"
        else:
            seen[site.lock_id] = 1
    return LockTable(sites)
