"""The lock table's ids: each helper lock's init ids once the table has numbered its sites (link()),
and the call sites whose helper's inits all stay pthread mutexes (kept_call_sites())."""

from rclify.lock_identity.lock_helpers.model import Helpers


def link(helpers: Helpers, sites: list) -> tuple[list, list[str]]:
    """After the lock table has numbered its sites: each helper lock gets the ids of its
    pthread_mutex_init calls, and each of those sites a line saying which calls it stands for.
    Returns the sites without the call sites whose helper lock has no init id (spatch did not read
    the helper's file: no configuration could reach it), and notes for the report."""
    ids: dict[tuple[str, int], list[str]] = {}
    for site in sites:
        for s in site.sites:
            if s.kind == "mutex_init":
                ids.setdefault((s.file, s.line), []).append(site.lock_id)
    for helper in helpers.by_file.values():
        for lock in helper.locks:
            lock.init_ids = sorted({i for at in lock.inits for i in ids.get(at, [])})
    calls: dict[int, int] = {}  # id(helper lock) -> calls with an entry
    for site in sites:
        for cl in site.helper_calls:
            calls[id(cl.lock)] = calls.get(id(cl.lock), 0) + 1
    created: dict[str, list[str]] = {}  # init id -> 'helper() (what)' for each helper lock it initialises
    total: dict[str, int] = {}  # init id -> calls with an entry of their own
    notes = list(helpers.notes)
    for helper in sorted(helpers.by_file.values(), key=lambda h: (h.file, h.line)):
        for lock in helper.locks:
            n = calls.get(id(lock), 0)
            for init in lock.init_ids:
                created.setdefault(init, []).append(f"{helper.kind}{helper.name}() ({lock.describe(helper)})")
                total[init] = total.get(init, 0) + n
            through = f", called through the macro{'s' if len(helper.aliases) > 1 else ''} " \
                f"{', '.join(a + '()' for a in sorted(helper.aliases))} too" if helper.aliases else ""
            notes.append(f"{helper.file}:{helper.line}: {helper.kind}{helper.name}() creates a lock for its caller "
                         f"({lock.describe(helper)}{through}): {n} call{'s' if n != 1 else ''} with an entry of "
                         f"{'their' if n != 1 else 'its'} own" + ("" if lock.init_ids else
                         "; its pthread_mutex_init was not read (spatch): they keep none"))
    for site in sites:
        if site.lock_id in created:
            n = total[site.lock_id]
            site.helper_init = True
            site.note = (f"the lock {' or '.join(created[site.lock_id])} creates where a call has no entry of its "
                         f"own ({n} call{'s have' if n != 1 else ' has'} one)")
    kept = [s for s in sites if s.kind != "helper_call" or all(cl.lock.init_ids for cl in s.helper_calls)]
    return kept, notes


def kept_call_sites(sites, kept_ids: set[str]) -> set[str]:
    """Ids of helper call sites whose helper's init sites all stay pthread mutexes
    (kept_posix.py): they get no configuration of their own either."""
    out = set()
    for site in sites:
        if site.kind == "helper_call" and all(i in kept_ids for cl in site.helper_calls for i in cl.lock.init_ids):
            out.add(site.lock_id)
    return out
