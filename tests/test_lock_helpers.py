"""Locks created through a program's helper functions (rclify/lock_identity/lock_helpers/): each call
of the helper is a lock of its own, in lock_config.h, at run time and in a profile.

Inference and the call rewrite are checked on small texts; the corpus program
corpus/lock_helper_init_sites (a libuv-style my_mutex_init() called for three locks, an allocator
new_lock() called twice) end to end: its lock_config.h entries, a lock_config.h edit that puts one
of those locks on another algorithm, and the ids of both profilers.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rclify import runtime_build
from rclify.profiling import lock_id_matching, profile
from rclify.lock_identity import lock_helpers
from rclify.lock_identity.lock_helpers import infer, pointer_to, root, wrap_calls
from rclify.lock_identity.lock_table import LockSite
from corpus_build import build, run_expected
from lock_config_edits import entries as config_entries, set_algorithm

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "lock_helper_init_sites"

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

HELPERS_C = """
#include <pthread.h>
#include <stdlib.h>
#include "lock.h"

#define CHECK(x) do { if (x) abort(); } while (0)

int lock_setup(pthread_mutex_t *m)
{
#ifdef DEBUG
    pthread_mutexattr_t attr;
    CHECK(pthread_mutexattr_init(&attr));
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    int err = pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
    return err;
#else
    return pthread_mutex_init(m, NULL);
#endif
}

struct lock *new_lock(int spins)
{
    struct lock *l = malloc(sizeof *l);
    if (l == NULL)
        return NULL;
    l->spins = spins;
    if (lock_setup(&l->m) != 0) {
        free(l);
        return NULL;
    }
    return l;
}

static void stats_init(struct stats *s) { pthread_mutex_init(&s->mu, NULL); s->n = 0; }

void server_init(struct server *srv) { pthread_mutex_init(&srv->a, NULL); start_threads(srv); }

static pthread_mutex_t global;
void global_init(void) { pthread_mutex_init(&global, NULL); }

static struct lock *shared;
struct lock *get_shared(void) { if (!shared) { shared = malloc(sizeof *shared); lock_setup(&shared->m); } return shared; }

void use(struct stats *s) { stats_init(s); run(s); }
"""

MAIN_C = """
#include "lock.h"
static pthread_mutex_t table_lock;
struct server { struct lock *big; pthread_mutex_t q; };
struct lock *accounts[4];
int main(void) {
    struct server s;
    struct lock *l1 = new_lock(0);
    s.big = new_lock(1);
    if (lock_setup(&table_lock)) return 1;
    lock_setup(&s.q);
    for (int i = 0; i < 4; i++)
        accounts[i] = (struct lock *)new_lock(i);
    keep(new_lock(3));
    return 0;
}
"""


@pytest.fixture(scope="module")
def helpers():
    return infer({"helpers.c": HELPERS_C, "main.c": MAIN_C})


def test_helpers_are_functions_that_only_set_up_a_lock_of_their_caller(helpers):
    found = {name: [(lock.param, lock.path) for lock in h.locks] for name, h in helpers.helpers.items()}
    assert found == {
        "lock_setup": [(0, "")],  # its parameter is the mutex; attributes and both #if branches
        "new_lock": [(-1, "->m")],  # allocates, sets up the mutex through lock_setup, returns it
        "stats_init": [(0, "->mu")],  # a field of what its parameter points to
    }
    # not helpers: server_init also starts threads; global_init sets up a global; get_shared
    # returns a global (one lock however often it is called)
    assert helpers.helpers["new_lock"].locks[0].inits == helpers.helpers["lock_setup"].locks[0].inits
    assert len(helpers.helpers["lock_setup"].locks[0].inits) == 2
    assert helpers.helpers["stats_init"].returns_void and not helpers.helpers["lock_setup"].returns_void


def test_each_call_names_its_lock_in_the_callers_terms(helpers):
    calls = [(c.file, c.function, c.helper.name, c.internal, [c.lock_expression(l) for l in c.helper.locks])
             for c in helpers.calls]
    assert calls == [
        ("helpers.c", "new_lock", "lock_setup", True, ["&l->m"]),  # the allocator's own: not a lock
        ("helpers.c", "get_shared", "lock_setup", False, ["&shared->m"]),
        ("helpers.c", "use", "stats_init", False, ["&s->mu"]),
        ("main.c", "main", "new_lock", False, ["&l1->m"]),  # a declaration
        ("main.c", "main", "new_lock", False, ["&s.big->m"]),
        ("main.c", "main", "lock_setup", False, ["&table_lock"]),
        ("main.c", "main", "lock_setup", False, ["&s.q"]),
        ("main.c", "main", "new_lock", False, ["&accounts[i]->m"]),  # through a cast
        ("main.c", "main", "new_lock", False, ["new_lock()->m"]),  # not assigned: named by the call
    ]
    assert [c.internal for c in helpers.calls if c.function == "new_lock"] == [True]


YARN_C = """
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define local static
typedef struct { pthread_mutex_t mutex; pthread_cond_t cond; long value; } lock;
void (*yarn_abort)(int) = NULL;
local void *(*my_malloc_f)(size_t) = malloc;
local pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;
local void fail(int err, char const *file, long line) {
    fprintf(stderr, "error %d (%s:%ld)\\n", err, file, line);
    if (yarn_abort != NULL)
        yarn_abort(err);
    exit(err);
}
local void *my_malloc(size_t size, char const *file, long line) {
    void *block;
    if ((block = my_malloc_f(size)) == NULL)
        fail(12, file, line);
    return block;
}
local void note(char const *what) { pthread_mutex_lock(&log_mutex); fputs(what, stderr); pthread_mutex_unlock(&log_mutex); }
local void clear_value(lock *l) { l->value = 0; }
lock *new_lock_(long initial, char const *file, long line) {
    lock *bolt = my_malloc(sizeof(lock), file, line);
    int ret = pthread_mutex_init(&(bolt->mutex), NULL);
    if (ret)
        fail(ret, file, line);
    ret = pthread_cond_init(&(bolt->cond), NULL);
    if (ret)
        fail(ret, file, line);
    bolt->value = initial;
    return bolt;
}
lock *noted_lock(void) { lock *l = my_malloc(sizeof(lock), "", 0); note("new"); pthread_mutex_init(&l->mutex, NULL); return l; }
lock *pair_lock(void) { lock *l = my_malloc(sizeof(lock), "", 0); pthread_mutex_init(&l->mutex, NULL); twice(); return l; }
local void twice(void) { free(new_lock_(0, "", 0)); }
void reset_lock(lock *l) { pthread_mutex_init(&l->mutex, NULL); clear_value(l); }
lock *a, *b;
int main(void) { a = new_lock_(0, __FILE__, __LINE__); b = new_lock_(1, __FILE__, __LINE__); return 0; }
"""


def test_a_helper_may_call_program_functions_that_neither_create_nor_take_locks():
    """pigz's yarn.c: new_lock_() allocates through the program's my_malloc() (itself through a
    function pointer) and reports errors through its fail() (which may call the program's
    yarn_abort pointer): a helper, one lock per call.  Not helpers: a function calling one that
    takes a lock (note()), one reaching another helper (twice()), one handing the lock's object to
    a function of the program (clear_value(l): the object's set-up, as uv_loop_init(loop) does)."""
    found = infer({"yarn.c": YARN_C})
    assert sorted(found.helpers) == ["new_lock_"]
    assert [(lock.param, lock.path) for lock in found.helpers["new_lock_"].locks] == [(-1, "->mutex")]
    assert [(c.function, [c.lock_expression(l) for l in c.helper.locks]) for c in found.calls if not c.internal] == \
        [("twice", ["new_lock_()->mutex"]), ("main", ["&a->mutex"]), ("main", ["&b->mutex"])]


def test_lock_expressions():
    assert root("m") == ("m", "")
    assert root("&l->m") == ("l", "->m")
    assert root("&(p)->locks[i % 4]") == ("p", "->locks[]")
    assert root("(pthread_mutex_t *)m") == ("m", "")
    assert root("&m") is None and root("&s.m") is None and root("&g->a") == ("g", "->a")
    assert pointer_to("&c->big", "->m") == "&c->big.m"
    assert pointer_to("l", "->inner.m") == "&l->inner.m"
    assert pointer_to("&loop->wq_mutex", "") == "&loop->wq_mutex"
    assert pointer_to("q + 1", "->m") == "&(q+1)->m"


def test_static_helpers_of_the_same_name_in_two_files_are_told_apart():
    a = "static int setup(pthread_mutex_t *m) { return pthread_mutex_init(m, NULL); }\nvoid fa(void) { setup(&x); }\n"
    b = "static int setup(pthread_mutex_t *m) { start(); return pthread_mutex_init(m, NULL); }\nvoid fb(void) { setup(&y); }\n"
    found = infer({"a.c": a, "b.c": b})
    assert [(c.file, c.args) for c in found.calls] == [("a.c", ("&x",))]


def test_a_function_returning_a_helpers_new_lock_is_a_helper():
    """libmicrohttpd's MHD_create_response_from_buffer() ends in `return
    MHD_create_response_from_data(..)`: the lock the inner allocator creates is its caller's
    caller's, named where that calls the outer one."""
    text = """
struct lock *new_lock(int spins)
{
    struct lock *l = malloc(sizeof *l);
    if (!l)
        return NULL;
    pthread_mutex_init(&l->m, NULL);
    return l;
}
struct lock *new_default(void) { return new_lock(0); }
struct lock *new_spinning(int n) { if (n < 0) return NULL; return (struct lock *) new_lock(n); }
struct lock *new_or_global(int n) { if (n) return new_lock(n); return global; }
void f(void) { a = new_default(); b = new_spinning(3); c = new_or_global(1); }
"""
    found = infer({"l.c": text})
    assert sorted(found.helpers) == ["new_default", "new_lock", "new_spinning"]
    outside = [(c.function, c.called, c.lock_expression(c.helper.locks[0])) for c in found.calls if not c.internal]
    assert outside == [("new_or_global", "new_lock() call", "new_lock()->m"),  # it may return another lock
                       ("f", "new_default() call", "&a->m"), ("f", "new_spinning() call", "&b->m")]


def _site(call, lock_id, init_ids):
    call.helper.locks[0].init_ids = init_ids
    site = LockSite(lock_id, "helper_call", call.file, call.line, call.function, "", "")
    site.helper_calls = [lock_helpers.CallLock(call, call.helper.locks[0], call.lock_expression(call.helper.locks[0]))]
    return site


def test_calls_are_wrapped_once_and_found_again_where_extraction_moved_them():
    helper_c = "int setup(pthread_mutex_t *m)\n{\n    return pthread_mutex_init(m, NULL);\n}\n"
    main_c = ("void f(void)\n{\n    if (setup(&a) != 0)\n        abort();\n    setup(&b);\n}\n"
              "void g(void)\n{\n    setup(&b);\n}\n")
    found = infer({"helper.c": helper_c, "main.c": main_c})
    calls = [c for c in found.calls if c.file == "main.c"]
    sites = [_site(c, f"main.c:lock{n}", ["helper.c:m"]) for n, c in enumerate(calls)]
    text, notes = wrap_calls(main_c, "main.c", sites)
    assert 'if (RCL_LOCK_SITE(setup(&a), RCL_SITE("helper.c:m", RCLIFY_LOCK_main_c_lock0)) != 0)' in text
    assert 'RCL_LOCK_SITE(setup(&b), RCL_SITE("helper.c:m", RCLIFY_LOCK_main_c_lock1));' in text.split("void g")[0]
    assert 'RCL_LOCK_SITE(setup(&b), RCL_SITE("helper.c:m", RCLIFY_LOCK_main_c_lock2));' in text.split("void g")[1]
    assert notes == []
    assert wrap_calls(text, "main.c", sites) == (text, [])  # running it again changes nothing
    # g's call moved into its extracted section's function: found there; f's second call is gone
    moved = main_c.replace("void g(void)", "static int rclify_cs_g_1(void *ctx)").replace("    setup(&b);\n}\n",
                                                                                         "    return 0;\n}\n", 1)
    text, notes = wrap_calls(moved, "main.c", sites)
    assert "RCLIFY_LOCK_main_c_lock2" in text and "RCLIFY_LOCK_main_c_lock1" not in text
    assert len(notes) == 1 and notes[0].startswith("main.c:5: setup() call not found again")
    assert wrap_calls(main_c, "main.cpp", sites) == (main_c, [])  # C++: compound literals, left alone


def test_a_void_helper_gets_the_void_wrapper():
    found = infer({"h.c": "static void init_it(struct s *p) { pthread_mutex_init(&p->m, NULL); }\n"
                          "void f(struct s *x) { init_it(x); }\n"})
    text, _ = wrap_calls("void f(struct s *x) { init_it(x); }\n", "h.c", [_site(found.calls[0], "h.c:x->m", ["h.c:p->m"])])
    assert text == 'void f(struct s *x) { RCL_LOCK_SITE_VOID(init_it(x), RCL_SITE("h.c:p->m", RCLIFY_LOCK_h_c_x_m)); }\n'


# ---- the corpus program, end to end -----------------------------------------------------------------

CALL_SITE_IDS = {"main.c:stats_lock", "main.c:queue.lock", "main.c:tbl->lock", "main.c:hits->m", "main.c:misses->m"}


def _flags():
    return runtime_build.cflags(), runtime_build.libs()


def _build(tree: Path) -> None:
    cflags, libs = _flags()
    proc = build(tree, ["-Werror", *cflags], libs)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _run(tree: Path, **env) -> subprocess.CompletedProcess:
    return run_expected(tree, CORPUS / "expected.txt", **env)


@pytest.fixture(scope="module")
def transformed(tmp_path_factory):
    runtime_build.build_runtime()
    tree = tmp_path_factory.mktemp("lock-helpers") / "tree"
    shutil.copytree(CORPUS, tree)
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "--report",
                           str(tree.parent / "report.json"), "-q"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tree


def test_each_call_site_is_an_entry_of_lock_config(transformed):
    entries = config_entries(transformed)
    # the helper's own init site stays, for calls without an entry of their own (none here)
    assert set(entries) == CALL_SITE_IDS | {"lockutil.c:m"}
    assert "new_lock() call at main.c:61 in setup()" in entries["main.c:hits->m"].description
    assert "my_mutex_init() call at main.c:59 in setup()" in entries["main.c:tbl->lock"].description
    assert "set up by my_mutex_init() at main.c:54" in entries["main.c:stats_lock"].description
    assert "(5 calls have one)" in entries["lockutil.c:m"].description
    main = (transformed / "main.c").read_text()
    assert main.count("RCL_LOCK_SITE(") == 5 and 'RCL_SITE("lockutil.c:m", RCLIFY_LOCK_main_c_hits_m)' in main
    report = json.loads((transformed.parent / "report.json").read_text())
    assert all(r["status"] == "extracted" for r in report["regions"])


def test_a_lock_config_edit_reaches_only_its_call_sites_lock(transformed, tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(transformed, tree)
    set_algorithm(tree, "main.c:hits->m", "rcl")  # 4000 sections; misses (the other new_lock call) has 8000
    _build(tree)
    stats = _run(tree, RCLIFY_STATS="1").stderr
    servers = [line.split() for line in stats.splitlines() if re.match(r"^\d+\s+-?\d+\s", line)]
    assert sum(int(row[4]) for row in servers) == 4000, stats  # column 'sections': hits' only

    set_algorithm(tree, "main.c:hits->m", "posix")
    set_algorithm(tree, "main.c:tbl->lock", "profile")  # one of my_mutex_init's three calls
    _build(tree)
    out = tree / "profile.json"
    _run(tree, RCLIFY_PROFILE_OUT=str(out))
    assert [(l["id"], l["acquisitions"]) for l in json.loads(out.read_text())["locks"]] == [("main.c:tbl->lock", 12000)]


def test_runtime_profile_ids_are_the_call_sites(transformed, tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(transformed, tree)
    _build(tree)
    out = tree / "profile.json"
    _run(tree, RCLIFY_LOCKS="*=profile", RCLIFY_PROFILE_OUT=str(out))
    assert {l["id"] for l in json.loads(out.read_text())["locks"]} == CALL_SITE_IDS


def test_preload_profile_names_the_calls_and_assign_maps_them(transformed, tmp_path):
    """The unmodified program under the preload profiler: each lock is named by the helper's
    call (file:line of the call, the lock expression there), and assign maps each to its entry."""
    tree = tmp_path / "original"
    shutil.copytree(CORPUS, tree)
    proc = subprocess.run(["cc", "-O1", "-g", "-pthread", "lockutil.c", "main.c", "-o", "prog"], cwd=tree,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    prof = profile.run([str(tree / "prog")])
    lines = (CORPUS / "main.c").read_text().splitlines()

    def line_of(text):
        return next(n for n, line in enumerate(lines, 1) if text in line)

    locks = {l["id"]: l for l in prof["locks"]}
    expected = {f"main.c:{line_of('my_mutex_init(&stats_lock)')}": "&stats_lock",
                f"main.c:{line_of('my_mutex_init(&queue.lock)')}": "&queue.lock",
                f"main.c:{line_of('my_mutex_init(&tbl->lock)')}": "&tbl->lock",
                f"main.c:{line_of('hits = new_lock(0)')}": "&hits->m",
                f"main.c:{line_of('misses = new_lock(100)')}": "&misses->m"}
    assert {i: l.get("expression") for i, l in locks.items()} == expected
    assert locks[f"main.c:{line_of('hits = new_lock(0)')}"]["acquisitions"] == 4000
    assert "(pthread_mutex_init at " in locks[f"main.c:{line_of('my_mutex_init(&tbl->lock)')}"]["name"]
    matching = lock_id_matching.match_ids(prof, list(config_entries(transformed)))
    assert not matching.unmatched and not matching.ambiguous
    assert {locks[p]["expression"]: c for p, c in matching.to_config.items()} == {
        "&stats_lock": "main.c:stats_lock", "&queue.lock": "main.c:queue.lock", "&tbl->lock": "main.c:tbl->lock",
        "&hits->m": "main.c:hits->m", "&misses->m": "main.c:misses->m"}


HELPER_CALLS_C = """
#include <pthread.h>
#include <stdio.h>

struct box { pthread_mutex_t m; long n; };

static int box_init(struct box *b)
{
    b->n = 0;
    return pthread_mutex_init(&b->m, NULL);
}

__attribute__((noinline)) int tail_init(pthread_mutex_t *m)
{
    return pthread_mutex_init(m, NULL);
}

static struct box a, b;
static pthread_mutex_t c;

int main(void)
{
    if (box_init(&a) || box_init(&b))
        return 1;
    tail_init(&c);
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&a.m); a.n++; pthread_mutex_unlock(&a.m);
        pthread_mutex_lock(&b.m); b.n += 2; pthread_mutex_unlock(&b.m);
        pthread_mutex_lock(&c); pthread_mutex_unlock(&c);
    }
    printf("%ld %ld\\n", a.n, b.n);
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_preload_names_inlined_and_tail_called_helpers_by_their_call(tmp_path, opt):
    """-O2 inlines box_init into main (its frames are inline ones) and tail_init ends in a jump to
    pthread_mutex_init (its frame is gone); two calls on one line are told apart by address."""
    src = tmp_path / "calls.c"
    src.write_text(HELPER_CALLS_C)
    subprocess.run(["gcc", "-g", opt, "-pthread", str(src), "-o", str(tmp_path / "calls")], check=True)
    prof = profile.run([str(tmp_path / "calls")])
    named = {l["id"]: (l.get("expression"), l["acquisitions"]) for l in prof["locks"]}
    lines = HELPER_CALLS_C.split("\n")
    both = next(n for n, line in enumerate(lines, 1) if "box_init(&a) || box_init(&b)" in line)
    tail = next(n for n, line in enumerate(lines, 1) if "tail_init(&c);" in line)
    assert named == {f"calls.c:{both}": ("&a.m", 1000), f"calls.c:{both}#2": ("&b.m", 1000),
                     f"calls.c:{tail}": ("&c", 1000)}


# ---- a helper called only through a macro (pigz's yarn.h) ------------------------------------------

MACRO_YARN_H = """
#include <pthread.h>
typedef struct { pthread_mutex_t mutex; long value; } lock;
lock *new_lock_(long, char const *, long);
#define new_lock(a) new_lock_(a, __FILE__, __LINE__)
#define new_unlocked() (new_lock(0))
"""

MACRO_YARN_C = """
#include <stdio.h>
#include <stdlib.h>
#include "yarn.h"
lock *new_lock_(long initial, char const *file, long line) {
    lock *bolt = malloc(sizeof(lock));
    if (bolt == NULL || pthread_mutex_init(&(bolt->mutex), NULL)) {
        fprintf(stderr, "%s:%ld: no lock\\n", file, line);
        exit(1);
    }
    bolt->value = initial;
    return bolt;
}
"""

MACRO_MAIN_C = """
#include <stdio.h>
#include "yarn.h"
static lock *a, *b;
static void *work(void *arg)
{
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&a->mutex);
        a->value++;
        pthread_mutex_unlock(&a->mutex);
        pthread_mutex_lock(&b->mutex);
        b->value += 2;
        pthread_mutex_unlock(&b->mutex);
    }
    return arg;
}
int main(void)
{
    pthread_t t[2];
    a = new_lock(0);
    b = new_lock(1);
    for (int k = 0; k < 2; k++)
        pthread_create(&t[k], NULL, work, NULL);
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    printf("%ld %ld\\n", a->value, b->value);
    return 0;
}
"""


def test_a_macro_whose_body_calls_a_helper_is_that_helper():
    """`#define new_lock(a) new_lock_(a, __FILE__, __LINE__)` (pigz): each use of the macro is a
    call of new_lock_(), named and found again by the macro's use; so is a macro calling it."""
    texts = {"yarn.h": MACRO_YARN_H, "yarn.c": MACRO_YARN_C,
             "main.c": MACRO_MAIN_C + "lock *c;\nvoid f(void) { c = new_unlocked(); }\n"}
    found = infer(texts)
    helper = found.helpers["new_lock_"]
    assert sorted(helper.aliases) == ["new_lock", "new_unlocked"]
    assert helper.aliases["new_unlocked"].args == ("0", "__FILE__", "__LINE__")
    calls = [(c.function, c.via, c.args, [c.lock_expression(l) for l in helper.locks]) for c in found.calls]
    assert calls == [("main", "new_lock", ("0", "__FILE__", "__LINE__"), ["&a->mutex"]),
                     ("main", "new_lock", ("1", "__FILE__", "__LINE__"), ["&b->mutex"]),
                     ("f", "new_unlocked", ("0", "__FILE__", "__LINE__"), ["&c->mutex"])]
    # the preload profiler finds a call by the line of the macro's use
    line = next(n for n, text in enumerate(MACRO_MAIN_C.split("\n"), 1) if "b = new_lock(1)" in text)
    call = lock_helpers.call_at(MACRO_MAIN_C, "main.c", line, helper)
    assert call is not None and call.via == "new_lock" and call.lock_expression(helper.locks[0]) == "&b->mutex"
    sites = [_site(c, f"main.c:lock{n}", ["yarn.c:bolt->mutex"]) for n, c in enumerate(found.calls)]
    text, notes = wrap_calls(texts["main.c"], "main.c", sites)
    assert notes == []
    assert 'a = RCL_LOCK_SITE(new_lock(0), RCL_SITE("yarn.c:bolt->mutex", RCLIFY_LOCK_main_c_lock0));' in text
    assert 'c = RCL_LOCK_SITE(new_unlocked(), RCL_SITE("yarn.c:bolt->mutex", RCLIFY_LOCK_main_c_lock2));' in text
    # not aliases: a macro doing more than the call, or passing on something that is neither a
    # parameter nor a constant
    more = infer({"yarn.c": MACRO_YARN_C, "yarn.h": MACRO_YARN_H.replace("__LINE__)", "__LINE__); x++"),
                  "main.c": "#define mk(a) new_lock_(a + 1, 0, 0)\nvoid g(void) { p = mk(2); }\n"})
    assert more.helpers["new_lock_"].aliases == {} and more.calls == []
    # nor one defined in two #if branches of one file, differently (each branch's #define is read)
    twice = MACRO_YARN_H + "#ifdef DEBUG_LOCKS\n#define new_unlocked() new_lock_(1, __FILE__, __LINE__)\n#endif\n"
    branches = infer({"yarn.c": MACRO_YARN_C, "yarn.h": twice, "main.c": "void f(void) { c = new_unlocked(); }\n"})
    assert sorted(branches.helpers["new_lock_"].aliases) == ["new_lock"]


@pytest.fixture(scope="module")
def macro_tree(tmp_path_factory):
    runtime_build.build_runtime()
    tree = tmp_path_factory.mktemp("macro-helper") / "tree"
    tree.mkdir()
    for name, text in [("yarn.h", MACRO_YARN_H), ("yarn.c", MACRO_YARN_C), ("main.c", MACRO_MAIN_C)]:
        (tree / name).write_text(text)
    original = tree.parent / "original"
    shutil.copytree(tree, original)
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "-q"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tree, original


def test_each_use_of_a_helpers_macro_is_an_entry_wrapped_at_the_use(macro_tree, tmp_path):
    tree, original = macro_tree
    entries = config_entries(tree)
    assert {"main.c:a->mutex", "main.c:b->mutex"} <= set(entries)
    assert "new_lock() call (a macro for new_lock_()) at main.c:20 in main()" in entries["main.c:a->mutex"].description
    main = (tree / "main.c").read_text()
    assert 'a = RCL_LOCK_SITE(new_lock(0), RCL_SITE("yarn.c:bolt->mutex", RCLIFY_LOCK_main_c_a_mutex));' in main
    assert 'b = RCL_LOCK_SITE(new_lock(1), RCL_SITE("yarn.c:bolt->mutex", RCLIFY_LOCK_main_c_b_mutex));' in main
    # at run time each use's lock carries its entry's id
    cflags, libs = _flags()
    subprocess.run(["cc", "-O1", "-g", "-pthread", *cflags, "yarn.c", "main.c", "-o", "prog", *libs], cwd=tree,
                   check=True, timeout=120)
    out = tmp_path / "profile.json"
    proc = subprocess.run([str(tree / "prog")], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, RCLIFY_LOCKS="*=profile", RCLIFY_PROFILE_OUT=str(out)))
    assert proc.returncode == 0 and proc.stdout == "2000 4001\n", proc.stderr
    assert {l["id"]: l["acquisitions"] for l in json.loads(out.read_text())["locks"]} == \
        {"main.c:a->mutex": 2000, "main.c:b->mutex": 2000}
    # the preload profiler names the untransformed program's locks by the macro's uses, and
    # assign maps them to those entries
    subprocess.run(["cc", "-O1", "-g", "-pthread", "yarn.c", "main.c", "-o", "prog"], cwd=original, check=True,
                   timeout=120)
    prof = profile.run([str(original / "prog")])
    assert {l["id"]: l.get("expression") for l in prof["locks"]} == {"main.c:20": "&a->mutex", "main.c:21": "&b->mutex"}
    matching = lock_id_matching.match_ids(prof, list(entries))
    assert not matching.unmatched and not matching.ambiguous
    assert sorted(matching.to_config.values()) == ["main.c:a->mutex", "main.c:b->mutex"]


def test_functions_read_between_statements_are_those_read_from_the_whole_files_tokens():
    """c_text.functions() tokenizes only the text between file-level statements; every C file
    of the corpus and of the fixtures gives the definitions the whole file's tokens give, and a
    head whose `(` lies before the last `;` (blanked #if branches can make one) falls back to them."""
    from rclify.paths import CORPUS_DIR
    from rclify.lock_identity.lock_helpers.c_text import _functions_in_tokens, blanked_code, functions

    files = sorted([*CORPUS_DIR.rglob("*.[ch]"), *(Path(__file__).parent / "fixtures").rglob("*.[ch]")])
    assert len(files) > 100
    found = 0
    for path in files:
        code = blanked_code(path.read_text(errors="surrogateescape"))
        assert functions(str(path), code) == _functions_in_tokens(str(path), code), path
        found += len(functions(str(path), code))
    assert found > 300
    code = blanked_code("int f(int a; int b) { return b; }\nstatic void *g(void) { return 0; }\n")
    assert [(f.name, f.params, f.static) for f in functions("x.c", code)] == [("f", ("b",), False),
                                                                             ("g", (), True)]
    assert functions("x.c", code) == _functions_in_tokens("x.c", code)
