"""Lock ids: one per lock allocation site, stable across runs.

Allocation sites, from a Discovery:
  static_mutex / mutex_var definitions  'file.c:name', function-local 'file.c:func:name',
                                         arrays 'file.c:name[]'
  mutex_init call sites                  'file.c:' + the initialised expression, normalised:
                                         '&me->notify_lock' -> 'thread.c:me->notify_lock',
                                         '&item_locks[i]'   -> 'thread.c:item_locks[]'
  calls of lock helpers (lock_helpers/) the same, with the lock's expression at the call:
                                         'uv_mutex_init(&loop->wq_mutex)' -> 'loop.c:loop->wq_mutex',
                                         'c->big = new_lock(0)'          -> 'main.c:c->big->m'
A mutex_init of a defined variable (`static pthread_mutex_t m; ... pthread_mutex_init(&m, NULL)`,
also through `extern` from another file) is the same site as the definition.  Two different sites
that would get one id are told apart by '#2', '#3' (in line order): ids carry no line numbers
otherwise.  Struct fields (mutex_var sites with scope 'struct ...') are not allocation sites: the
mutex_init calls on them are.
"""

import re
from collections import defaultdict

from rclify.ctext.tokens import balanced
from rclify.lock_config import LockEntry
from rclify.lock_identity import lock_helpers
from rclify.lock_identity.discovered_sites import Discovery, Site
from rclify.ctext.includes import IncludeGraph
from rclify.lock_identity.lock_site import LockSite
from rclify.lock_identity.struct_instances import struct_locks
from rclify.lock_identity.zero_initialised_locks import header_includers, name_zero_initialised, zero_filled


def _field_initialized(fields: list["LockSite"], source: str, offset: int) -> "LockSite | None":
    """Of a struct variable's mutex fields, the one an initializer at offset is for: named by the
    designator before it (`.lock = PTHREAD_MUTEX_INITIALIZER`), else the only field."""
    designator = re.search(r"\.\s*([A-Za-z_]\w*)\s*=\s*$", source[max(0, offset - 200) : offset])
    if designator:
        return next((f for f in fields if f.member == designator.group(1)), None)
    initialized = [f for f in fields if f.kind == "static_mutex"]
    return initialized[0] if len(initialized) == 1 and len(fields) == 1 else None


def normalize(expr: str) -> str:
    """'&(c->thread->stats.mutex)' -> 'c->thread->stats.mutex'; '&item_locks[i % N]' -> 'item_locks[]'."""
    text = re.sub(r"\s+", "", expr)
    text = re.sub(r"^\((?:const)?(?:pthread_mutex_t|rcl_mutex_t|pthread_rwlock_t|rcl_rwlock_t)\*\)", "", text)  # a cast to the lock type
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
    while True:  # (p)->f -> p->f; ((p->have))->mutex (pigz's possess(p->have) through a wrapper) -> p->have->mutex
        simpler = re.sub(r"\(([A-Za-z_]\w*)\)", r"\1", text)
        simpler = re.sub(r"(?<![\w\])])\(([A-Za-z_]\w*(?:(?:\.|->)[A-Za-z_]\w*|\[\])*)\)", r"\1", simpler)
        if simpler == text:
            return text
        text = simpler


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

    def __init__(self, sites: list[LockSite], notes: list[str] | None = None):
        self.sites = sites
        self.by_id = {s.lock_id: s for s in sites}
        self.notes = notes or []  # 'file:line: message': zero-initialised locks left without an id

    # -- hand-over to the rewrite patches (spatch's Python reads it back) --------------------------

    def to_json(self) -> list[dict]:
        return [{"lock_id": s.lock_id, "kind": s.kind, "file": s.file, "line": s.line, "function": s.function,
                 "expr": s.expr, "normalized": s.normalized, "zero_init": s.zero_init,
                 "constructor_in": s.constructor_in, "member": s.member, "static": s.static} for s in self.sites]

    @classmethod
    def from_json(cls, rows: list[dict]) -> "LockTable":
        return cls([LockSite(**row) for row in rows])

    def for_init(self, expr: str, file: str, function: str, line: int = 0) -> LockSite | None:
        """The site of a pthread_mutex_init(expr, ...) call in file/function, at line when given:
        two inits of one expression in one function, or in two #define bodies (file scope), are
        two sites."""
        norm = normalize(expr)
        at = [s for s in self.sites if s.kind == "mutex_init" and s.file == file and s.line == line
              and s.normalized == norm] if line else []
        if len(at) == 1:  # an init of no defined variable is a site of its own
            return at[0]
        inits = [s for s in self.sites if (s.kind == "mutex_init" or s.member) and s.file == file and s.normalized == norm] \
            or [s for s in self.sites if s.member and s.normalized == norm]  # a struct variable of another file
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
        named = [s for s in statics if not s.function and s.base == element]
        if len(named) > 1 or (named and named[0].member):  # mutex fields of a struct variable
            return _field_initialized(named, source, offset)
        if named:
            return named[0]
        candidates = [s for s in statics if s.function == element] or [s for s in statics if not s.function]
        best, best_at = None, -1
        for site in candidates:
            for m in re.finditer(rf"\b{re.escape(site.base)}\b", source[:offset]):
                if ";" not in source[m.end():offset] and m.start() > best_at:
                    best, best_at = site, m.start()
        return best

    def zero_initialised(self, file: str, element: str, name: str) -> LockSite | None:
        """The site that gets an initializer for the zero-initialised definition of name at
        spatch's current_element (the function for a local, the name or 'something_else' at file
        scope), or None."""
        for site in self.sites:
            if site.zero_init == "initializer" and site.file == file and site.base == name \
                    and (site.function == element if site.function else element in (name, "something_else")):
                return site
        return None

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
        matches the site `threads[].stats.mutex`): same file first, a unique one elsewhere.  The
        init sites inside lock helpers come last: the calls of the helper name the locks.
        """
        norm = normalize(expr)
        if not norm:
            return None
        if re.fullmatch(r"[A-Za-z_]\w*(\[\])?", norm):
            site = self.variable(norm.rstrip("[]"), file, function)
            if site:
                return site.lock_id
        return _match(norm, file, function, [s for s in self.sites if not s.helper_init]) or \
            _match(norm, file, function, self.sites)


def _match(norm: str, file: str, function: str, sites: list[LockSite]) -> str | None:
    same = [s for s in sites if s.normalized == norm]
    for group in ([s for s in same if s.file == file and s.function == function], [s for s in same if s.file == file], same):
        if group:
            return group[0].lock_id
    member = last_member(norm)
    if member:
        named = [s for s in sites if last_member(s.normalized) == member]
        in_file = [s for s in named if s.file == file]
        if in_file:
            return in_file[0].lock_id
        if named and len({s.lock_id for s in named}) == 1:
            return named[0].lock_id
        if named:
            return sorted(named, key=lambda s: s.lock_id)[0].lock_id
    return None


def build_lock_table(discovery: Discovery, texts: dict[str, str] | None = None,
                     includes: IncludeGraph | None = None) -> LockTable:
    """One LockSite per allocation site of the discovery, with unique stable ids.

    texts: {file: text} of the tree's .c and .h files, to decide how zero-initialised definitions
    get their id (which .c files include a header; whether a static lock is used at all);
    includes: their include graph by base name (the pipeline's; else built from texts)."""
    sites = _definitions(discovery)
    if includes is None:
        includes = IncludeGraph.by_base_name_of(texts or {})
    for lock in struct_locks(texts or {}, includes):  # mutexes inside file-scope struct variables
        if not any(s.normalized == lock.normalized and not s.function for s in sites):
            sites.append(LockSite(f"{lock.file}:{lock.normalized}", "static_mutex" if lock.initialized else "mutex_var",
                                  lock.file, lock.line, "", lock.normalized, lock.normalized,
                                  member=lock.field, static=lock.static))
    table = LockTable(sites)

    # mutex_init calls, and calls of the tree's lock helpers (each call a lock: lock_helpers/):
    # the definition's site when they initialise a defined variable
    helpers = lock_helpers.infer(texts or {})
    pending: dict[str, list[tuple[Site | lock_helpers.CallLock, str]]] = defaultdict(list)
    rwlock_inits = [s for s in discovery.of_kind("rwlock_api") if s.api == "pthread_rwlock_init"]  # a site each, as a mutex's
    for site in [*discovery.of_kind("mutex_init"), *rwlock_inits, *helpers.call_locks()]:
        norm = normalize(site.expr)
        base = re.fullmatch(r"([A-Za-z_]\w*)(\[\])?", norm)
        owner = table.variable(base.group(1), site.file, site.function) if base else None
        owner = owner or next((s for s in sites if s.member and s.normalized == norm), None)
        if owner:
            (owner.sites if isinstance(site, Site) else owner.helper_calls).append(site)
            continue
        pending[f"{site.file}:{norm}"].append((site, norm))
    inside_helpers = helpers.init_lines()  # numbered after the calls of their helper ('#2'): the calls name the locks
    for lock_id, group in sorted(pending.items()):
        group.sort(key=lambda item: ((item[0].file, item[0].line) in inside_helpers, item[0].line, item[0].column))
        for n, (site, norm) in enumerate(group, 1):
            unique = lock_id if n == 1 else f"{lock_id}#{n}"
            if isinstance(site, Site):
                sites.append(LockSite(unique, "mutex_init", site.file, site.line, site.function, site.expr, norm, sites=[site]))
            else:
                sites.append(LockSite(unique, "helper_call", site.file, site.line, site.function, site.expr, norm,
                                      helper_calls=[site]))

    sites.sort(key=lambda s: s.lock_id)
    _number_collisions(sites)
    sites, notes = lock_helpers.link(helpers, sites)  # the helpers' init sites, by id
    includers = header_includers(includes)
    notes += [note for site in sites if (note := name_zero_initialised(site, includers, texts or {}))]
    notes += _anonymous_fields(discovery, sites)
    return LockTable(sites, sorted(notes))


def _definitions(discovery: Discovery) -> list[LockSite]:
    """The sites of the mutexes defined at file or function scope, one per object."""
    sites: list[LockSite] = []
    common: dict[str, LockSite] = {}  # one object: `pthread_mutex_t m;` tentatively defined in several files
    # one object too: a file-scope variable initialised in each branch of an #if (two definitions of
    # one name in one file are otherwise an error)
    defined: dict[tuple[str, str], LockSite] = {}
    for site in sorted(discovery.sites, key=lambda s: (s.file.endswith(".h"), s.file, s.line, s.column)):
        if site.kind not in ("static_mutex", "mutex_var") or site.scope.startswith("struct") or site.scope not in ("file", "function"):
            continue
        name = site.expr + ("[]" if site.array else "")
        tentative = site.scope == "file" and not site.static and site.alone and zero_filled(site)
        if tentative and name in common:
            common[name].sites.append(site)
            continue
        branch_of = (site.file, name) if site.scope == "file" and site.kind == "static_mutex" else None
        if branch_of in defined:  # one object defined in each branch of an #if (fio's overlap_check)
            defined[branch_of].sites.append(site)
            continue
        lock_id = f"{site.file}:{site.function + ':' if site.function else ''}{name}"
        sites.append(LockSite(lock_id, site.kind, site.file, site.line, site.function, site.expr, name, sites=[site]))
        if tentative:
            common[name] = sites[-1]
        if branch_of:
            defined[branch_of] = sites[-1]
    return sites


def _number_collisions(sites: list[LockSite]) -> None:
    """Definitions can collide too (two function-local statics of one name): the later ids, in
    the sorted order, get '#2', '#3', ..."""
    seen: dict[str, int] = {}
    for site in sites:
        if site.lock_id in seen:
            seen[site.lock_id] += 1
            site.lock_id = f"{site.lock_id}#{seen[site.lock_id]}"
        else:
            seen[site.lock_id] = 1


def _anonymous_fields(discovery: Discovery, sites: list[LockSite]) -> list[str]:
    """A note per pthread_mutex_t field of a struct that no init call and no file-scope struct
    variable names (they give a field's instances their ids): its instances run anonymous."""
    named = {s.member or last_member(s.normalized) for s in sites if s.kind in ("mutex_init", "helper_call") or s.member}
    return [f"{f.file}:{f.line}: {f.expr}: a pthread_mutex_t field of {f.scope} that no pthread_mutex_init "
            f"and no file-scope struct variable names: an instance elsewhere (a function-local struct, "
            f"zero-filled heap memory) runs anonymous (no lock id)"
            for f in discovery.sites
            if f.kind == "mutex_var" and f.scope not in ("file", "function") and f.expr not in named]
