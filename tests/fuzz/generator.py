"""rclify's own program generator: what Csmith lacks.

A program is a handful of independent *scenarios*, each a function `sK()` returning an unsigned
checksum that main prints on its own line (`sK <kind> = <value>`), so a difference names the
scenario that made it.  Every scenario is deterministic by construction: threads only make
commutative updates (sums, xors, maxima, counts) or work on their own data, condvar waits wait for
a predicate, barriers separate the phases that read from those that write.

Each scenario draws its own shape from the random generator: where the lock lives (global, a
struct on the stack, the heap), how it is taken (direct call, macro, checked call, checked macro,
wrapper function), what the section calls (static, extern in another file, through a function
pointer, recursive, variadic helpers), and its early exits.  A *feature* names every shape a
transform rule is about; `disabled` features are never generated (the fixed campaign disables the
known bugs the transform has not fixed yet, docs/fuzzing.md).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# Every feature the generator can turn off.  The known transform bugs (issue 22) are marked: the
# fixed-seed campaign of the test command disables them until the lead's fixes land.
FEATURES = {
    "threads": "threads making commutative updates under a lock",
    "condvar": "condvar waits (latches, bounded buffers) on stack state reached through pointers",
    "barrier": "a generation barrier on the stack",
    "early-exit": "unlock; return / goto out / break / continue early exits",
    "goto-own-unlock": "goto to a label on the region's own unlock (issue 22: refused)",
    "nested": "nested locks in a fixed order",
    "helpers": "helpers called in sections: static, extern, function pointer, variadic",
    "recursion": "a section in a recursive function calling itself (issue 22: does not compile)",
    "ptr-alias-local": "a local read in the section but written through a pointer (issue 22: captured by value)",
    "region-local-escape": "a local declared in the region whose address escapes past the unlock (issue 22)",
    "alloca": "alloca in a section, used after the unlock (issue 22)",
    "func-macro": "__func__ through a macro in a section (issue 22)",
    "func-literal": "__func__ written in a section, and assert",
    "errno-tls": "errno and _Thread_local reads in sections",
    "stdatomic": "<stdatomic.h> in a function with a section (issue 22: parse errors)",
    "locals": "struct, array, volatile, static and const locals in sections; &local to a helper",
    "error-label": "gotos taken locked to an error label placed after a top-level `unlock; return;` (issue 24)",
    "cleanup-pop": "a section inside pthread_cleanup_push(unlock) ... pthread_cleanup_pop(1), the push before or after the lock (issue 24)",
    "flag-lock": "a lock taken and released under one flag, `if (c) lock; ... if (c) unlock;` (a member, a global, a parameter), run locked by threads and unlocked alone (issue 23)",
    "flag-lock-macro": "the flag-lock's `if` inside its lock macros: a statement macro or a do-while(0) one",
    "compound-literal": "compound literals in sections: one whose address is kept past the unlock, one copied, one in a block of the section (issue 35)",
    "cleanup-local": "__attribute__((cleanup)) locals declared right after the lock, used after the unlock or not (the cleanup takes the lock), and in a block of the section (issue 35)",
    "stringize-macro": "a macro that stringizes its argument (`#x`), directly or through another macro, applied to a local in a section (issue 35)",
    "static-local": "a static local declared in a section and read after the unlock (issue 35)",
    "delegated-calls": "sections that call what issue 34 lets leave their thread: formatted output, a pipe's "
                       "write and read, a short sleep, a semaphore, errno, a const operations table (designated "
                       "and positional), a static function pointer, a checked condvar signal whose error path "
                       "ends the process (issue 34)",
}

# features whose transform bugs are known and not fixed yet: left out of the fixed campaign
# (issue 22's were: goto-own-unlock, recursion, ptr-alias-local, region-local-escape, alloca,
# func-macro, stdatomic; fixed in 745d60c and 16dd0f0, all generated again)
KNOWN_BUGS: tuple[str, ...] = ()

LOCK_STYLES = ("direct", "macro", "checked", "checked-macro", "wrapper", "asserted")

PRELUDE = r"""#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <errno.h>
#include <assert.h>
#include <alloca.h>
#include <semaphore.h>
#include <time.h>
#include <unistd.h>
{atomic_include}
#define LOCK(m) pthread_mutex_lock(m)
#define UNLOCK(m) pthread_mutex_unlock(m)
#define CHECKED_LOCK(m) do {{ if (pthread_mutex_lock(m) != 0) abort(); }} while (0)
#define CHECKED_UNLOCK(m) do {{ if (pthread_mutex_unlock(m) != 0) abort(); }} while (0)
#define FN_LEN() ((unsigned long)strlen(__func__))
#define FZ_SHOW(x) fz_show(#x, (long)(x))
#define FZ_SHOW_VIA(x) FZ_SHOW(x)

__attribute__((unused)) static void fz_lock(pthread_mutex_t *m) {{ pthread_mutex_lock(m); }}
__attribute__((unused)) static void fz_unlock(pthread_mutex_t *m) {{ pthread_mutex_unlock(m); }}
__attribute__((unused)) static long fz_static_helper(long a, long b) {{ return a * 3 + (b ^ 5); }}
__attribute__((unused)) static long fz_rec_helper(long n) {{ return n <= 0 ? 1 : (n % 7) + fz_rec_helper(n - 1); }}
__attribute__((unused)) static long fz_var_helper(int n, ...)
{{
    va_list ap;
    long s = 0;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        s += va_arg(ap, long) * (i + 1);
    va_end(ap);
    return s;
}}
__attribute__((unused)) static void fz_add_to(long *p, long v) {{ *p += v; }}
__attribute__((unused)) static void fz_unlock_handler(void *m) {{ pthread_mutex_unlock(m); }}
/* a checksum of a name and a value: what a stringizing macro prints */
__attribute__((unused)) static long fz_show(const char *name, long v)
{{
    long h = v;
    for (const char *c = name; *c; c++)
        h = h * 31 + *c;
    return h & 0xffff;
}}
long fz_extern_helper(long a, long b);
"""

HELPERS_C = r"""long fz_extern_helper(long a, long b) { return (a << 1) - b + 11; }
"""


def lock_stmt(style: str, expr: str) -> str:
    return {"direct": f"pthread_mutex_lock({expr});",
            "macro": f"LOCK({expr});",
            "checked": f"if (pthread_mutex_lock({expr}) != 0) abort();",
            "checked-macro": f"CHECKED_LOCK({expr});",
            "wrapper": f"fz_lock({expr});",
            "asserted": f"assert(pthread_mutex_lock({expr}) == 0);"}[style]


def unlock_stmt(style: str, expr: str) -> str:
    return {"direct": f"pthread_mutex_unlock({expr});",
            "macro": f"UNLOCK({expr});",
            "checked": f"if (pthread_mutex_unlock({expr}) != 0) abort();",
            "checked-macro": f"CHECKED_UNLOCK({expr});",
            "wrapper": f"fz_unlock({expr});",
            "asserted": f"assert(pthread_mutex_unlock({expr}) == 0);"}[style]


@dataclass
class Scenario:
    kind: str
    decls: str  # file-scope declarations and functions
    func: str  # `static unsigned long sK(void)`
    features: set[str] = field(default_factory=set)


@dataclass
class Program:
    files: dict[str, str]  # name -> text
    scenarios: list[Scenario]

    @property
    def features(self) -> set[str]:
        return set().union(*(s.features for s in self.scenarios)) if self.scenarios else set()


class Gen:
    def __init__(self, rng: random.Random, disabled: set[str]):
        self.rng = rng
        self.disabled = set(disabled)

    def on(self, feature: str, p: float = 0.5) -> bool:
        return feature not in self.disabled and self.rng.random() < p

    def style(self) -> str:
        return self.rng.choice(LOCK_STYLES)

    def helper_call(self, a: str, b: str, feats: set[str]) -> str:
        """An expression calling a pure helper (in a section)."""
        if not self.on("helpers", 0.7):
            return f"({a} + {b})"
        feats.add("helpers")
        kind = self.rng.choice(("static", "extern", "fnptr", "recursive", "variadic"))
        return {"static": f"fz_static_helper({a}, {b})",
                "extern": f"fz_extern_helper({a}, {b})",
                "fnptr": f"fz_fnptr({a}, {b})",
                "recursive": f"fz_rec_helper(({a}) % 9)",
                "variadic": f"fz_var_helper(2, (long)({a}), (long)({b}))"}[kind]


# --- scenarios -------------------------------------------------------------------------------

def scen_threads(g: Gen, k: str) -> Scenario:
    r = g.rng
    feats = {"threads"}
    st = g.style()
    nthreads = r.randint(2, 4)
    iters = r.randint(50, 400)
    storage = r.choice(("global", "stack", "heap"))
    m1, m2 = r.randint(3, 97), r.randint(3, 97)
    sh = "sh"
    lk = f"&{sh}->m"
    body: list[str] = []
    pre: list[str] = []  # before the lock, in the loop
    post: list[str] = []  # after the unlock, in the loop
    worker_locals = ["long acc = 0;"]
    choices = ["sum", "xor", "max", "cnt", "acc"]
    for _ in range(r.randint(1, 4)):
        c = r.choice(choices)
        if c == "sum":
            body.append(f"{sh}->sum += {g.helper_call('v', 'tid', feats)};")
        elif c == "xor":
            body.append(f"{sh}->x ^= (unsigned long)v * 2654435761u;")
        elif c == "max":
            body.append(f"if (v > {sh}->maxv) {sh}->maxv = v;")
        elif c == "cnt":
            body.append(f"{sh}->cnt++;")
        else:
            body.append("acc += v & 15;")
    exit_kind = None
    if g.on("early-exit", 0.5):
        feats.add("early-exit")
        exit_kind = r.choice(("continue", "break", "goto-out"))
        p = r.randint(2, 9)
        pos = r.randint(0, len(body))
        if exit_kind == "continue":
            body.insert(pos, f"if (v % {p} == 0) {{ {sh}->cnt += 2; {unlock_stmt(st, lk)} continue; }}")
        elif exit_kind == "break":
            body.insert(pos, f"if (i == {iters - r.randint(1, 20)}) {{ {sh}->cnt += 1000; {unlock_stmt(st, lk)} break; }}")
        else:
            body.insert(pos, f"if (i == {iters // 2}) {{ {sh}->cnt += 77; {unlock_stmt(st, lk)} goto out; }}")
    own_unlock = False
    if exit_kind is None and g.on("goto-own-unlock", 0.3):
        feats.add("goto-own-unlock")
        own_unlock = True
        body.insert(r.randint(0, len(body)), f"if (v % {r.randint(2, 7)} == 1) goto {k}_unlock;")
    if g.on("ptr-alias-local", 0.25):
        feats.add("ptr-alias-local")
        worker_locals.append("long seen = 0; long *seenp = &seen;")
        body.append(f"*seenp += 1; if (seen % {r.randint(2, 5)} == 0) {sh}->cnt2++;")
    if g.on("region-local-escape", 0.25):
        feats.add("region-local-escape")
        worker_locals.append("const char *bp = 0;")
        pre.append("bp = 0;")  # an early exit may skip the assignment
        body.append("char buf[24]; snprintf(buf, sizeof buf, \"v%ld\", v); bp = buf;")
        post.append("if (bp) acc += (long)strlen(bp) + bp[1];")
    if g.on("alloca", 0.2):
        feats.add("alloca")
        worker_locals.append("char *ap = 0;")
        pre.append("ap = 0;")
        body.append("ap = alloca(32); snprintf(ap, 32, \"%ld\", v * 7);")
        post.append("if (ap) acc += (long)strlen(ap);")
    if g.on("errno-tls", 0.3):
        feats.add("errno-tls")
        if r.random() < 0.5:
            pre.append("errno = tid + 3;")
            body.append(f"{sh}->sum += errno;")
        else:
            worker_locals.append(f"{k}_tls = tid * 10 + 1;")
            body.append(f"{sh}->sum += {k}_tls;")
    if g.on("func-literal", 0.3):
        feats.add("func-literal")
        body.append(f"{sh}->sum += (long)strlen(__func__); assert(strcmp(__func__, \"{k}_worker\") == 0);")
    if g.on("func-macro", 0.2):
        feats.add("func-macro")
        body.append(f"{sh}->sum += FN_LEN();")
    decl_tail = ""
    escapes = any("bp = buf;" in b for b in body)  # a push/pop pair is a block: buf would die at the pop
    if own_unlock:
        region = [lock_stmt(st, lk), *body, f"{k}_unlock:", unlock_stmt(st, lk)]
    elif exit_kind is None and not escapes and g.on("cleanup-pop", 0.25):
        feats.add("cleanup-pop")
        push, pop = f"pthread_cleanup_push(fz_unlock_handler, {lk});", "pthread_cleanup_pop(1);"
        region = [push, lock_stmt(st, lk), *body, pop] if r.random() < 0.5 else [lock_stmt(st, lk), push, *body, pop]
    else:
        region = [lock_stmt(st, lk), *body, unlock_stmt(st, lk)]
    loop_body = "\n        ".join([f"long v = (long)((i * {m1} + tid * {m2}) % 1000);", *pre, *region, *post])
    out_label = "out:\n    (void)0;" if exit_kind == "goto-out" else ""
    shared_def = f"struct {k}_shared {{ pthread_mutex_t m; long sum; unsigned long x; long maxv; long cnt; long cnt2; long accs; }};"
    if storage == "global":
        decl_tail = f"static struct {k}_shared {k}_g = {{ PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0 }};"
        setup = f"struct {k}_shared *shp = &{k}_g;"
        teardown = ""
    elif storage == "stack":
        setup = f"struct {k}_shared shs; memset(&shs, 0, sizeof shs); pthread_mutex_init(&shs.m, NULL); struct {k}_shared *shp = &shs;"
        teardown = "pthread_mutex_destroy(&shp->m);"
    else:
        setup = f"struct {k}_shared *shp = calloc(1, sizeof *shp); pthread_mutex_init(&shp->m, NULL);"
        teardown = "pthread_mutex_destroy(&shp->m);"
    tls = f"__attribute__((unused)) static _Thread_local long {k}_tls;" if "errno-tls" in feats else ""
    decls = f"""{shared_def}
{decl_tail}
{tls}
struct {k}_arg {{ struct {k}_shared *sh; int tid; }};
static void *{k}_worker(void *p)
{{
    struct {k}_arg *a = p;
    struct {k}_shared *{sh} = a->sh;
    int tid = a->tid;
    {' '.join(worker_locals)}
    for (int i = 0; i < {iters}; i++) {{
        {loop_body}
    }}
{out_label}
    {lock_stmt(st, lk)}
    {sh}->accs += acc;
    {unlock_stmt(st, lk)}
    return NULL;
}}
"""
    heap_free = "free(shp);" if storage == "heap" else ""
    func = f"""static unsigned long {k}(void)
{{
    {setup}
    pthread_t th[{nthreads}];
    struct {k}_arg args[{nthreads}];
    for (int t = 0; t < {nthreads}; t++) {{
        args[t].sh = shp;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, {k}_worker, &args[t]) != 0) abort();
    }}
    for (int t = 0; t < {nthreads}; t++)
        pthread_join(th[t], NULL);
    unsigned long r = (unsigned long)shp->sum * 31u + shp->x + (unsigned long)shp->maxv * 7u
                      + (unsigned long)shp->cnt * 13u + (unsigned long)shp->cnt2 * 17u + (unsigned long)shp->accs;
    {teardown}
    {heap_free}
    return r;
}}
"""
    return Scenario("threads", decls, func, feats)


def scen_latch(g: Gen, k: str) -> Scenario:
    """A countdown latch on the caller's stack; workers add to a sum, count down, the caller waits."""
    r = g.rng
    feats = {"condvar", "threads"}
    st = g.style()
    n = r.randint(2, 4)
    local_counter = g.on("ptr-alias-local", 0.3)
    if local_counter:
        feats.add("ptr-alias-local")
    via_ptr_struct = r.random() < 0.5
    decls = f"""struct {k}_latch {{ pthread_mutex_t m; pthread_cond_t c; int remaining; int *remp; long sum; }};
struct {k}_arg {{ struct {k}_latch *l; int tid; }};
static void *{k}_worker(void *p)
{{
    struct {k}_arg *a = p;
    struct {k}_latch *l = a->l;
    long mine = 0;
    for (int i = 0; i <= {r.randint(10, 200)}; i++)
        mine += (i * (a->tid + 1)) % {r.randint(5, 50)};
    {lock_stmt(st, '&l->m')}
    l->sum += mine;
    if (--*l->remp == 0)
        pthread_cond_broadcast(&l->c);
    {unlock_stmt(st, '&l->m')}
    return NULL;
}}
"""
    if local_counter:
        counter_setup = f"int remaining = {n}; lt.remp = &remaining;"
        pred = "remaining > 0"
    elif via_ptr_struct:
        counter_setup = f"lt.remaining = {n}; lt.remp = &lt.remaining; struct {k}_latch *lp = &lt;"
        pred = "*lp->remp > 0"
    else:
        counter_setup = f"lt.remaining = {n}; lt.remp = &lt.remaining;"
        pred = "lt.remaining > 0"
    func = f"""static unsigned long {k}(void)
{{
    struct {k}_latch lt;
    memset(&lt, 0, sizeof lt);
    pthread_mutex_init(&lt.m, NULL);
    pthread_cond_init(&lt.c, NULL);
    {counter_setup}
    pthread_t th[{n}];
    struct {k}_arg args[{n}];
    for (int t = 0; t < {n}; t++) {{
        args[t].l = &lt;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, {k}_worker, &args[t]) != 0) abort();
    }}
    long seen;
    {lock_stmt(st, '&lt.m')}
    while ({pred})
        pthread_cond_wait(&lt.c, &lt.m);
    seen = lt.sum;
    {unlock_stmt(st, '&lt.m')}
    for (int t = 0; t < {n}; t++)
        pthread_join(th[t], NULL);
    pthread_cond_destroy(&lt.c);
    pthread_mutex_destroy(&lt.m);
    return (unsigned long)seen * 3u + 1u;
}}
"""
    return Scenario("latch", decls, func, feats)


def scen_barrier(g: Gen, k: str) -> Scenario:
    r = g.rng
    feats = {"barrier", "condvar", "threads"}
    st = g.style()
    n = r.randint(2, 4)
    phases = r.randint(2, 6)
    decls = f"""struct {k}_bar {{ pthread_mutex_t m; pthread_cond_t c; int n, count; unsigned gen; }};
static void {k}_wait(struct {k}_bar *b)
{{
    {lock_stmt(st, '&b->m')}
    unsigned g = b->gen;
    if (++b->count == b->n) {{
        b->count = 0;
        b->gen++;
        pthread_cond_broadcast(&b->c);
    }} else {{
        while (g == b->gen)
            pthread_cond_wait(&b->c, &b->m);
    }}
    {unlock_stmt(st, '&b->m')}
}}
struct {k}_arg {{ struct {k}_bar *b; long *slots; int tid; }};
static void *{k}_worker(void *p)
{{
    struct {k}_arg *a = p;
    for (int ph = 0; ph < {phases}; ph++) {{
        long s = 0;
        for (int j = 0; j < {n}; j++)
            s += a->slots[j];
        {k}_wait(a->b);
        a->slots[a->tid] = (s * {r.randint(2, 9)} + a->tid + ph) % 100003;
        {k}_wait(a->b);
    }}
    return NULL;
}}
"""
    func = f"""static unsigned long {k}(void)
{{
    struct {k}_bar bar = {{ .n = {n} }};
    long slots[{n}];
    pthread_mutex_init(&bar.m, NULL);
    pthread_cond_init(&bar.c, NULL);
    for (int j = 0; j < {n}; j++)
        slots[j] = j + 1;
    pthread_t th[{n}];
    struct {k}_arg args[{n}];
    for (int t = 0; t < {n}; t++) {{
        args[t].b = &bar;
        args[t].slots = slots;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, {k}_worker, &args[t]) != 0) abort();
    }}
    for (int t = 0; t < {n}; t++)
        pthread_join(th[t], NULL);
    unsigned long h = bar.gen;
    for (int j = 0; j < {n}; j++)
        h = h * 131u + (unsigned long)slots[j];
    return h;
}}
"""
    return Scenario("barrier", decls, func, feats)


def scen_exits(g: Gen, k: str) -> Scenario:
    """Single-threaded: a withdraw function with every kind of early exit, a loop with break and
    continue exits, a switch whose cases unlock."""
    r = g.rng
    feats = {"early-exit"}
    st = g.style()
    lk = "&a->m"
    own = g.on("goto-own-unlock", 0.4)
    if own:
        feats.add("goto-own-unlock")
    zero_case = "if (amt == 0) goto unlock;" if own else f"if (amt == 0) {{ {unlock_stmt(st, lk)} return 0; }}"
    label = "unlock:\n    " if own else ""
    # gotos taken with the lock held to an error label after a top-level `unlock; return rc;`
    error_label = not own and g.on("error-label", 0.4)
    if error_label:
        feats.add("error-label")
    negative = "if (amt % 9 == 4) {\n        rc = -3;\n        goto fail;\n    }\n    " if error_label else ""
    fail = (f"\n    return rc;\nfail:\n    a->log += 3;\n    {unlock_stmt(st, lk)}\n    rc -= 1;") if error_label else ""
    loop_lock = "&" + k + "_m"
    n = r.randint(20, 120)
    decls = f"""struct {k}_acct {{ pthread_mutex_t m; long bal; long log; }};
static pthread_mutex_t {k}_m = PTHREAD_MUTEX_INITIALIZER;
static long {k}_total;
static int {k}_take(struct {k}_acct *a, long amt)
{{
    int rc = 0;
    {lock_stmt(st, lk)}
    {negative}if (amt < 0) {{
        {unlock_stmt(st, lk)}
        return -2;
    }}
    if (a->bal < amt) {{
        rc = -1;
        a->log += 1000;
        {unlock_stmt(st, lk)}
        goto out;
    }}
    {zero_case}
    a->bal -= amt;
    a->log += amt;
    {label}{unlock_stmt(st, lk)}{fail}
out:
    return rc;
}}
static int {k}_classify(long v)
{{
    int r;
    {lock_stmt(st, loop_lock)}
    switch (v % 4) {{
    case 0:
        {k}_total += 1;
        {unlock_stmt(st, loop_lock)}
        return 10;
    case 1:
        {k}_total += 2;
        r = 11;
        {unlock_stmt(st, loop_lock)}
        break;
    default:
        {k}_total += {g.helper_call('v', '3', feats)};
        r = 12;
        {unlock_stmt(st, loop_lock)}
        break;
    }}
    return r;
}}
"""
    func = f"""static unsigned long {k}(void)
{{
    struct {k}_acct acct = {{ PTHREAD_MUTEX_INITIALIZER, {r.randint(100, 5000)}, 0 }};
    unsigned long h = 0;
    long i;
    for (i = 0; i < {n}; i++) {{
        long amt = (i * {r.randint(3, 41)}) % {r.randint(50, 200)} - {r.randint(0, 5)};
        h = h * 33u + (unsigned long)({k}_take(&acct, amt) + 3);
        h += (unsigned long){k}_classify(i * {r.randint(1, 9)});
        {lock_stmt(st, loop_lock)}
        if (i % {r.randint(2, 9)} == 0) {{
            {k}_total += i;
            {unlock_stmt(st, loop_lock)}
            continue;
        }}
        if ({k}_total > {r.randint(2000, 200000)}) {{
            {unlock_stmt(st, loop_lock)}
            break;
        }}
        {k}_total ^= i;
        {unlock_stmt(st, loop_lock)}
    }}
    return h + (unsigned long)acct.bal * 7u + (unsigned long)acct.log + (unsigned long){k}_total + (unsigned long)i;
}}
"""
    return Scenario("exits", decls, func, feats)


def scen_nested(g: Gen, k: str) -> Scenario:
    r = g.rng
    feats = {"nested", "threads"}
    st1, st2 = g.style(), g.style()
    n = r.randint(2, 4)
    iters = r.randint(50, 300)
    decls = f"""struct {k}_pair {{ pthread_mutex_t a, b; long x, y; unsigned long h; }};
static struct {k}_pair {k}_p = {{ PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, 1000, 1000, 0 }};
static void *{k}_worker(void *arg)
{{
    long tid = (long)(size_t)arg;
    struct {k}_pair *p = &{k}_p;
    for (int i = 0; i < {iters}; i++) {{
        long amt = (i + tid * {r.randint(2, 13)}) % {r.randint(5, 30)};
        {lock_stmt(st1, '&p->a')}
        p->x -= amt;
        {lock_stmt(st2, '&p->b')}
        p->y += amt;
        p->h += (unsigned long){g.helper_call('amt', 'tid', feats)};
        {unlock_stmt(st2, '&p->b')}
        p->x += amt / 2;
        {unlock_stmt(st1, '&p->a')}
    }}
    return NULL;
}}
"""
    func = f"""static unsigned long {k}(void)
{{
    pthread_t th[{n}];
    for (long t = 0; t < {n}; t++)
        if (pthread_create(&th[t], NULL, {k}_worker, (void *)(size_t)t) != 0) abort();
    for (int t = 0; t < {n}; t++)
        pthread_join(th[t], NULL);
    return (unsigned long){k}_p.x * 1000003u + (unsigned long){k}_p.y + {k}_p.h;
}}
"""
    return Scenario("nested", decls, func, feats)


def scen_bounded_buffer(g: Gen, k: str) -> Scenario:
    r = g.rng
    feats = {"condvar", "threads"}
    st = g.style()
    prod = r.randint(1, 3)
    items = r.randint(20, 200)
    cap = r.randint(1, 8)
    decls = f"""struct {k}_q {{ pthread_mutex_t m; pthread_cond_t not_full, not_empty; long buf[{cap}]; int head, count, producers; }};
struct {k}_parg {{ struct {k}_q *q; int tid; }};
static void *{k}_producer(void *p)
{{
    struct {k}_parg *a = p;
    struct {k}_q *q = a->q;
    for (int i = 0; i < {items}; i++) {{
        long v = (long)i * {r.randint(2, 17)} + a->tid;
        {lock_stmt(st, '&q->m')}
        while (q->count == {cap})
            pthread_cond_wait(&q->not_full, &q->m);
        q->buf[(q->head + q->count) % {cap}] = v;
        q->count++;
        pthread_cond_signal(&q->not_empty);
        {unlock_stmt(st, '&q->m')}
    }}
    {lock_stmt(st, '&q->m')}
    q->producers--;
    pthread_cond_broadcast(&q->not_empty);
    {unlock_stmt(st, '&q->m')}
    return NULL;
}}
"""
    func = f"""static unsigned long {k}(void)
{{
    struct {k}_q q;
    memset(&q, 0, sizeof q);
    pthread_mutex_init(&q.m, NULL);
    pthread_cond_init(&q.not_full, NULL);
    pthread_cond_init(&q.not_empty, NULL);
    q.producers = {prod};
    pthread_t th[{prod}];
    struct {k}_parg args[{prod}];
    for (int t = 0; t < {prod}; t++) {{
        args[t].q = &q;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, {k}_producer, &args[t]) != 0) abort();
    }}
    unsigned long sum = 0, xs = 0;
    long got = 0;
    for (;;) {{
        long v;
        {lock_stmt(st, '&q.m')}
        while (q.count == 0 && q.producers > 0)
            pthread_cond_wait(&q.not_empty, &q.m);
        if (q.count == 0) {{
            {unlock_stmt(st, '&q.m')}
            break;
        }}
        v = q.buf[q.head];
        q.head = (q.head + 1) % {cap};
        q.count--;
        pthread_cond_signal(&q.not_full);
        {unlock_stmt(st, '&q.m')}
        sum += (unsigned long)v;
        xs ^= (unsigned long)v * 40503u;
        got++;
    }}
    for (int t = 0; t < {prod}; t++)
        pthread_join(th[t], NULL);
    return sum * 7u + xs + (unsigned long)got;
}}
"""
    return Scenario("bounded-buffer", decls, func, feats)


def scen_locals(g: Gen, k: str) -> Scenario:
    """Single-threaded: the caller's locals of every kind read and written in sections."""
    r = g.rng
    feats = {"locals"}
    st = g.style()
    lk = f"&{k}_m"
    n = r.randint(5, 40)
    stmts = []
    for n_stmt in range(r.randint(2, 6)):
        c = r.choice(("struct", "array", "volatile", "static", "const", "addr", "ptr", "decl", "fnptr"))
        if c == "struct":
            stmts.append("pt.x += i; pt.y ^= (int)i; cp = pt;")
        elif c == "array":
            stmts.append(f"arr[i % 8] += i * {r.randint(1, 9)}; total += arr[(i + 3) % 8];")
        elif c == "volatile":
            stmts.append("vol += i & 3; total += vol;")
        elif c == "static":
            stmts.append("stat_n++; total += stat_n;")
        elif c == "const":
            stmts.append("total += cst * i;")
        elif c == "addr":
            stmts.append("fz_add_to(&total, i + 1);")
        elif c == "ptr":
            stmts.append("*tp += 2; total += *tp;")
        elif c == "decl":
            stmts.append(f"long tmpv{n_stmt} = i * 3 + total % 5; total += tmpv{n_stmt};")
        else:
            feats.add("helpers")
            stmts.append("total += fz_fnptr(i, total % 11);")
    if g.on("ptr-alias-local", 0.3):
        feats.add("ptr-alias-local")
        stmts.append("*hp = (i % 3 == 0); if (found) hits++;")
    if g.on("region-local-escape", 0.3):
        feats.add("region-local-escape")
        stmts.append("char nb[20]; snprintf(nb, sizeof nb, \"n%ld\", i); name = nb;")
        after = "total += (long)strlen(name) * name[1];"
    else:
        after = ""
    after = [after] if after else []
    first = []  # right after the lock
    if g.on("compound-literal", 0.3):
        feats.add("compound-literal")
        c = r.choice(("kept", "copied", "block"))
        if c == "kept":  # its address read after the unlock: hybrid (compound-literal-outlives-section)
            stmts.append(f"kp = &(struct {k}_pt){{ .x = i, .y = (int)(total & 7) }};")
            after.append("total += kp->x * 2 + kp->y;")
        elif c == "copied":
            stmts.append("cp = (struct " + k + "_pt){ i, 3 }; total += cp.y;")
        else:
            stmts.append("{ long *lq = (long[]){ i, 2 }; total += lq[0] * lq[1]; }")
    if g.on("cleanup-local", 0.3):
        feats.add("cleanup-local")
        # declared right after the lock in the loop's body, which goes on after the unlock: its
        # cleanup runs there, after the unlock (it takes the lock itself)
        first.append(f"__attribute__((cleanup({k}_clean_locked))) long clv = i + 1;")
        if r.random() < 0.5:
            after.append("total += clv;")
        if r.random() < 0.5:  # in a block of the section: its cleanup runs there, under the lock
            stmts.append(f"{{ __attribute__((cleanup({k}_clean))) long cln = i; total += cln; }}")
    if g.on("stringize-macro", 0.3):
        feats.add("stringize-macro")
        stmts.append(r.choice(("names += FZ_SHOW(tv);", "names += FZ_SHOW_VIA(total);", "names += FZ_SHOW(i);")))
    if g.on("static-local", 0.3):
        feats.add("static-local")
        stmts.append(f"static long sl = {r.randint(1, 9)}; sl += i;")
        after.append("total += sl;")
    after = " ".join(after)
    if g.on("func-literal", 0.3):
        feats.add("func-literal")
        stmts.append(f"total += (long)strlen(__func__); assert(strcmp(__func__, \"{k}\") == 0);")
    if g.on("func-macro", 0.2):
        feats.add("func-macro")
        stmts.append("total += (long)FN_LEN();")
    atomic = ""
    if g.on("stdatomic", 0.2):
        feats.add("stdatomic")
        atomic = f"atomic_fetch_add(&{k}_at, 1); total += atomic_load(&{k}_at);"
    body = "\n        ".join(first + stmts)
    decls = f"""static pthread_mutex_t {k}_m = PTHREAD_MUTEX_INITIALIZER;
{f'static atomic_long {k}_at;' if 'stdatomic' in feats else ''}
struct {k}_pt {{ long x; int y; }};
static long {k}_cleaned;
__attribute__((unused)) static void {k}_clean_locked(long *p)
{{
    pthread_mutex_lock(&{k}_m);
    {k}_cleaned += *p;
    pthread_mutex_unlock(&{k}_m);
}}
__attribute__((unused)) static void {k}_clean(long *p) {{ {k}_cleaned += *p * 7; }}
"""
    func = f"""static unsigned long {k}(void)
{{
    struct {k}_pt pt = {{ 1, 2 }}, cp = {{ 0, 0 }};
    long arr[8] = {{ 0 }};
    volatile long vol = 1;
    static long stat_n;
    const long cst = {r.randint(1, 99)};
    long total = 0, tv = 5, *tp = &tv;
    long found = 0, hits = 0, *hp = &found;
    const char *name = "";
    struct {k}_pt *kp = 0;
    long names = 0;
    (void)pt; (void)cp; (void)tp; (void)hp; (void)name; (void)cst; (void)vol; (void)hits; (void)arr;
    (void)kp; (void)names;
    for (long i = 0; i < {n}; i++) {{
        {atomic}
        {lock_stmt(st, lk)}
        {body}
        {unlock_stmt(st, lk)}
        {after}
    }}
    return (unsigned long)total + (unsigned long)cp.x * 3u + (unsigned long)cp.y + (unsigned long)tv
           + (unsigned long)hits * 1009u + (unsigned long)arr[2] + (unsigned long)stat_n
           + (unsigned long)names * 13u + (unsigned long){k}_cleaned * 17u;
}}
"""
    return Scenario("locals", decls, func, feats)


def scen_recursion(g: Gen, k: str) -> Scenario:
    r = g.rng
    feats = {"recursion"}
    st = g.style()
    depth = r.randint(2, 6)
    decls = f"""static pthread_mutex_t {k}_m[{depth + 1}] = {{ {', '.join(['PTHREAD_MUTEX_INITIALIZER'] * (depth + 1))} }};
static long {k}_val[{depth + 1}];
static long {k}_rec(int d)
{{
    long r;
    {lock_stmt(st, f'&{k}_m[d]')}
    r = d * 3 + {k}_val[d];
    if (d < {depth})
        r += {k}_rec(d + 1);
    {k}_val[d] += r;
    {unlock_stmt(st, f'&{k}_m[d]')}
    return r;
}}
"""
    func = f"""static unsigned long {k}(void)
{{
    unsigned long h = 0;
    for (int i = 0; i < {r.randint(2, 10)}; i++)
        h = h * 31u + (unsigned long){k}_rec(0);
    return h;
}}
"""
    return Scenario("recursion", decls, func, feats)


def scen_flag_lock(g: Gen, k: str) -> Scenario:
    """Pools locked only when a flag says they are shared: `if (c) lock; ... if (c) unlock;` with
    c a member (a shared pool and each thread's private one), a global set while the threads run,
    or a parameter; sometimes an exit inside (`if (c) unlock; return;`: hybrid) or a section that
    writes a sibling of the flag."""
    r = g.rng
    feats = {"flag-lock", "threads"}
    st = g.style()
    nthreads, iters = r.randint(2, 4), r.randint(50, 300)
    cond = r.choice(("p->shared", f"{k}_threaded", "locked", "__builtin_expect(!!(p->shared), 1)"))
    braced = r.random() < 0.4

    def under(stmt: str) -> str:
        return f"if ({cond}) {{ {stmt} }}" if braced else f"if ({cond})\n        {stmt}"

    lk = "&p->m"
    # the flag inside the lock macros: a statement macro (nuphase's USING(d)) or git's do-while
    in_macro = r.choice(("statement", "do-while")) if g.on("flag-lock-macro", 0.5) else ""
    macros = ""
    if in_macro:
        flag_lock, flag_unlock = (f"if ({cond}) {lock_stmt(st, '&(p)->m')}", f"if ({cond}) {unlock_stmt(st, '&(p)->m')}")
        if in_macro == "do-while":
            flag_lock, flag_unlock = f"do {{ {flag_lock} }} while (0)", f"do {{ {flag_unlock} }} while (0)"
        macros = f"#define {k.upper()}_LOCK(p) {flag_lock}\n#define {k.upper()}_UNLOCK(p) {flag_unlock}\n"
        feats.add("flag-lock-macro")
    body = [f"p->sum += {g.helper_call('v', 'v % 7', feats)};", "p->x ^= (unsigned long)v * 2654435761u;",
            "p->cnt++;"]
    r.shuffle(body)
    if r.random() < 0.3:
        body.insert(r.randint(0, len(body)), "p->spare = p->shared + (int)(v & 1);")  # a sibling of the flag
    exit_inside = g.on("early-exit", 0.3)
    if exit_inside:
        feats.add("early-exit")
        body.insert(r.randint(0, len(body)), f"if (v % {r.randint(3, 9)} == 1) {{ p->cnt2++; "
                                             f"{under(unlock_stmt(st, lk))} return before; }}")
    lock_line = f"{k.upper()}_LOCK(p);" if in_macro else under(lock_stmt(st, lk))
    unlock_line = f"{k.upper()}_UNLOCK(p);" if in_macro else under(unlock_stmt(st, lk))
    decls = macros + f"""struct {k}_pool {{ int shared; int spare; pthread_mutex_t m; long sum; unsigned long x; long cnt; long cnt2; }};
static struct {k}_pool {k}_shared_pool = {{ 1, 0, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0 }};
static int {k}_threaded;
static long {k}_add(struct {k}_pool *p, long v, int locked)
{{
    long before = 0;
    (void)locked;
    {lock_line}
    before = p->cnt;
    {chr(10).join("    " + b for b in body).strip()}
    {unlock_line}
    return before;
}}
struct {k}_arg {{ int tid; struct {k}_pool mine; }};
static void *{k}_worker(void *a_)
{{
    struct {k}_arg *a = a_;
    for (long i = 0; i < {iters}; i++) {{
        long v = (i * {r.randint(3, 97)} + a->tid * {r.randint(3, 97)}) % 1000;
        {k}_add(&{k}_shared_pool, v, 1);
        {k}_add(&a->mine, v % 13, 0);
    }}
    return NULL;
}}
"""
    func = f"""static unsigned long {k}(void)
{{
    pthread_t th[{nthreads}];
    struct {k}_arg args[{nthreads}];
    struct {k}_pool alone = {{ 0, 0, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0 }};
    unsigned long h = 0;
    int shared_flag = {k}_shared_pool.shared;
    for (long i = 0; i < {r.randint(5, 40)}; i++)
        h += (unsigned long){k}_add(&alone, i, 0);
    {k}_threaded = 1;
    for (int t = 0; t < {nthreads}; t++) {{
        args[t].tid = t;
        memset(&args[t].mine, 0, sizeof args[t].mine);
        pthread_mutex_init(&args[t].mine.m, NULL);
        if (pthread_create(&th[t], NULL, {k}_worker, &args[t]) != 0) abort();
    }}
    for (int t = 0; t < {nthreads}; t++) {{
        pthread_join(th[t], NULL);
        h += (unsigned long)args[t].mine.sum * 3u + args[t].mine.x + (unsigned long)args[t].mine.cnt;
    }}
    {k}_threaded = 0;
    h += (unsigned long){k}_add(&alone, 1, 0);
    h += (unsigned long)shared_flag;
    return h + (unsigned long){k}_shared_pool.sum * 7u + {k}_shared_pool.x + (unsigned long){k}_shared_pool.cnt
        + (unsigned long){k}_shared_pool.cnt2 + (unsigned long)alone.sum + alone.x;
}}
"""
    return Scenario("flag-lock", decls, func, feats)


def scen_delegated(g: Gen, k: str) -> Scenario:
    """Threads whose sections call the C library and function pointers the analysis lets leave
    their thread (issue 34): each section's results are commutative updates, so the checksum is
    the same whichever thread ran it."""
    r = g.rng
    feats = {"delegated-calls", "threads"}
    st = g.style()
    n = r.randint(2, 4)
    rounds = r.randint(5, 40)
    mod = r.randint(7, 97)
    uses = [u for u in ("format", "pipe", "sleep", "sem", "errno", "table", "pointer", "checked")
            if r.random() < 0.6] or ["table"]
    body = []
    if "format" in uses:
        body.append(f'{{ char b[32]; int w = snprintf(b, sizeof b, "%ld-%d", a->tid, i); {k}_st.chars += w + (long)strlen(b); }}')
    if "pipe" in uses:
        body.append(f'{{ char b[16]; int w = snprintf(b, sizeof b, "%d", i % {mod}); '
                    f'if (write({k}_st.fds[1], b, (size_t)w) != w) abort(); '
                    f'ssize_t got = read({k}_st.fds[0], b, (size_t)w); if (got != w) abort(); {k}_st.piped += got; }}')
    if "sleep" in uses:
        body.append(f'if (i % {r.randint(3, 9)} == 0) {{ struct timespec ts = {{ 0, 1000 }}; nanosleep(&ts, NULL); {k}_st.slept++; }}')
    if "sem" in uses:
        body.append(f'if (sem_trywait(&{k}_st.sem) == 0) {{ {k}_st.tokens++; sem_post(&{k}_st.sem); }}')
    if "errno" in uses:
        body.append(f'errno = (int)(i % 5); {k}_st.errs += errno;')
    if "table" in uses:
        body.append(f'{k}_st.acc += (a->tid % 2 ? {k}_named : {k}_positional).combine(i, a->tid) % {mod};')
    if "pointer" in uses:
        body.append(f'{k}_st.acc += {k}_chosen(i, a->tid) % {mod};')
    if "checked" in uses:
        body.append(f'{{ int rc = pthread_cond_signal(&{k}_st.c); if (rc != 0) {k}_die("pthread_cond_signal", rc); }}')
    r.shuffle(body)
    section = "\n        ".join(body)
    decls = f"""struct {k}_ops {{ long (*combine)(long, long); const char *(*name)(void); }};
static long {k}_add(long x, long y) {{ return x + y; }}
static long {k}_mix(long x, long y) {{ return x * 7 + y; }}
static const char *{k}_add_name(void) {{ return "add"; }}
static const struct {k}_ops {k}_named = {{ .name = {k}_add_name, .combine = {k}_add }};
__attribute__((unused)) static const struct {k}_ops {k}_positional = {{ {k}_mix, {k}_add_name }};
static long (*{k}_chosen)(long, long) = {k}_add;
static void {k}_choose(long (*f)(long, long)) {{ {k}_chosen = f; }}
static struct {{ pthread_mutex_t m; pthread_cond_t c; sem_t sem; int fds[2];
                 long chars, piped, slept, tokens, errs, acc; }} {k}_st;
__attribute__((unused)) static void {k}_die(const char *what, int err) {{ fprintf(stderr, "%s: %s\\n", what, strerror(err)); exit(3); }}
struct {k}_arg {{ long tid; }};
static void *{k}_worker(void *p)
{{
    struct {k}_arg *a = p;
    for (int i = 0; i < {rounds}; i++) {{
        {lock_stmt(st, f'&{k}_st.m')}
        {section}
        {unlock_stmt(st, f'&{k}_st.m')}
    }}
    return NULL;
}}
"""
    func = f"""static unsigned long {k}(void)
{{
    memset(&{k}_st, 0, sizeof {k}_st);
    pthread_mutex_init(&{k}_st.m, NULL);
    pthread_cond_init(&{k}_st.c, NULL);
    if (sem_init(&{k}_st.sem, 0, 1) != 0 || pipe({k}_st.fds) != 0) abort();
    {k}_choose({k}_mix);
    pthread_t th[{n}];
    struct {k}_arg args[{n}];
    for (int t = 0; t < {n}; t++) {{
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, {k}_worker, &args[t]) != 0) abort();
    }}
    for (int t = 0; t < {n}; t++)
        pthread_join(th[t], NULL);
    close({k}_st.fds[0]);
    close({k}_st.fds[1]);
    sem_destroy(&{k}_st.sem);
    return (unsigned long)({k}_st.chars * 131 + {k}_st.piped * 31 + {k}_st.slept * 7 + {k}_st.tokens * 3
                           + {k}_st.errs * 17 + {k}_st.acc + (long)strlen({k}_named.name()));
}}
"""
    return Scenario("delegated", decls, func, feats)


SCENARIOS = {
    "threads": (scen_threads, 4, "threads"),
    "latch": (scen_latch, 2, "condvar"),
    "barrier": (scen_barrier, 1, "barrier"),
    "exits": (scen_exits, 2, "early-exit"),
    "nested": (scen_nested, 1, "nested"),
    "bounded-buffer": (scen_bounded_buffer, 1, "condvar"),
    "locals": (scen_locals, 2, "locals"),
    "recursion": (scen_recursion, 1, "recursion"),
    "flag-lock": (scen_flag_lock, 1, "flag-lock"),
    "delegated": (scen_delegated, 2, "delegated-calls"),
}


def generate(rng: random.Random, disabled: set[str] = frozenset(), scenarios: int | None = None,
             only: list[tuple[str, int]] | None = None) -> Program:
    """A program of `scenarios` random scenarios (2-5).  `only` regenerates a subset: a list of
    (kind, state) pairs, state being the random state each scenario was drawn with (a difference is
    first narrowed to the scenario whose line differs)."""
    g = Gen(rng, disabled)
    kinds = [(name, w) for name, (_, w, feat) in SCENARIOS.items() if feat not in g.disabled]
    picks: list[tuple[str, int]] = []
    if only is None:
        for _ in range(scenarios or rng.randint(2, 5)):
            name = rng.choices([n for n, _ in kinds], weights=[w for _, w in kinds])[0]
            picks.append((name, rng.getrandbits(48)))
    else:
        picks = only
    scens = []
    for i, (name, state) in enumerate(picks):
        g.rng = random.Random(state)
        sc = SCENARIOS[name][0](g, f"s{i}")
        sc.state = state  # type: ignore[attr-defined]
        scens.append(sc)
    uses_atomic = any("stdatomic" in s.features for s in scens)
    text = PRELUDE.format(atomic_include="#include <stdatomic.h>" if uses_atomic else "")
    text += "__attribute__((unused)) static long (*fz_fnptr)(long, long) = fz_static_helper;\n\n"
    for s in scens:
        text += s.decls + "\n" + s.func + "\n"
    calls = "\n".join(f'    printf("s{i} {s.kind} = %lu\\n", s{i}());' for i, s in enumerate(scens))
    text += f"int main(void)\n{{\n{calls}\n    return 0;\n}}\n"
    return Program({"main.c": text, "helpers.c": HELPERS_C}, scens)
