"""Locks created through init macros (rclify/lock_identity/lock_helpers/helper_macros.py init_macros()): a function-like
macro whose body is one pthread_mutex_init of its parameter (zstd's `ZSTD_pthread_mutex_init`) is a
lock helper, so each use is a lock of its own: in lock_config.h, at run time, in both profilers.

Inference on small texts; corpus/lock_init_macro end to end, in its release build (the macro) and
its THREADS_DEBUG build (a function of the same name).
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rclify import runtime_build
from rclify.profiling import lock_id_matching, profile
from rclify.ctext.preprocessor import one_branch_where_unbalanced
from rclify.lock_identity import lock_helpers
from rclify.lock_identity.lock_helpers import infer, wrap_calls
from rclify.lock_identity.lock_table import LockSite
from corpus_build import build, run_expected
from lock_config_edits import entries as config_entries, set_algorithm

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "lock_init_macro"

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

THR_H = """#include <pthread.h>
#if defined(_WIN32)
#define my_init(m, a) ((void)(a), InitializeCriticalSection((m)), 0)
#else
#define my_init(m, a) pthread_mutex_init((m), (a))
#endif
#define FIELD_INIT(p) \\
    pthread_mutex_init(&(p)->mu, NULL)
#define OBJECT_INIT(m) pthread_mutex_init(&(m), NULL)
#define DEFAULT_INIT(x) my_init(x, NULL)
"""

USES_C = """#include "thr.h"
struct s { pthread_mutex_t mu; } *p, q;
pthread_mutex_t a, b[4];
int f(int i)
{
    int e = my_init(&a, NULL);
    e |= my_init(&b[i], NULL);
    e |= FIELD_INIT(p);
    e |= OBJECT_INIT(q.mu);
    return e | DEFAULT_INIT(&b[2]);
}
"""


def _calls(texts):
    found = infer(texts)
    return [(c.line, c.called, [c.lock_expression(l) for l in c.helper.locks]) for c in found.calls], found


def test_a_macro_whose_body_inits_its_parameter_is_a_helper_and_each_use_a_lock():
    calls, found = _calls({"thr.h": THR_H, "uses.c": USES_C})
    assert calls == [(6, "my_init() call", ["&a"]), (7, "my_init() call", ["&b[i]"]),
                     (8, "FIELD_INIT() call", ["&p->mu"]), (9, "OBJECT_INIT() call", ["&q.mu"]),
                     (10, "DEFAULT_INIT() call (a macro for my_init())", ["&b[2]"])]
    # the init sites are the lines of pthread_mutex_init in the bodies (FIELD_INIT's on its second line)
    assert {n: [l.inits for l in h.locks] for n, h in found.helpers.items()} == {
        "my_init": [[("thr.h", 5)]], "FIELD_INIT": [[("thr.h", 8)]], "OBJECT_INIT": [[("thr.h", 9)]]}
    assert all(h.macro for h in found.helpers.values())


def test_a_macro_whose_body_is_the_truth_of_the_init_is_one_too():
    """libmicrohttpd's mhd_locks.h, in src/microhttpd and again in src/lib: each use names both
    headers' init sites (the one its file includes is compiled)."""
    header = "#if defined(MHD_PTHREAD_MUTEX_)\n#define MHD_mutex_init_(pmutex) (! (pthread_mutex_init ((pmutex), NULL)))\n" \
             "#elif defined(MHD_W32_MUTEX_)\n#define MHD_mutex_init_(pmutex) (InitializeCriticalSectionAndSpinCount ( \\\n" \
             "    (pmutex),16))\n#else\n#define MHD_mutex_init_(ignore) (! 0)\n#endif\n"
    use = "void start(struct daemon *d) { if (! MHD_mutex_init_ (&d->nnc_lock)) abort(); }\n"
    calls, found = _calls({"src/microhttpd/mhd_locks.h": header, "src/lib/mhd_locks.h": header,
                           "src/microhttpd/daemon.c": use})
    assert calls == [(1, "MHD_mutex_init_() call", ["&d->nnc_lock"])]
    assert found.helpers["MHD_mutex_init_"].locks[0].inits == [("src/lib/mhd_locks.h", 2),
                                                               ("src/microhttpd/mhd_locks.h", 2)]
    # a body doing more with the result is none
    for body in ("pthread_mutex_init((m), NULL) + 1", "(x, pthread_mutex_init((m), NULL))", "f(pthread_mutex_init((m), 0))"):
        assert infer({"h.h": f"#define INIT(m) {body}\n", "u.c": "void g(void) { INIT(&q); }\n"}).calls == []


def test_a_checked_init_in_a_statement_or_passed_to_a_statement_macro_is_one_too():
    """`#define LOCK_INIT(l) CHECK(pthread_mutex_init((l), NULL))` with CHECK a do-while, and a
    do-while checking the init itself: each use is a lock of its own, wrapped as a statement (23
    locks of one program shared the macro's one entry)."""
    header = ("#define CHECK(x) do { if ((x) != 0) abort(); } while (0)\n"
              "#define LOCK_INIT(l) CHECK(pthread_mutex_init((l), NULL))\n"
              "#define BUCKET_INIT(b) do { if (pthread_mutex_init(&(b)->lock, NULL) != 0) abort(); } while (0)\n")
    use = "void setup(void)\n{\n    LOCK_INIT(&stats_lock);\n    BUCKET_INIT(&buckets[1]);\n}\n"
    calls, found = _calls({"h.h": header, "u.c": use})
    assert calls == [(3, "LOCK_INIT() call", ["&stats_lock"]), (4, "BUCKET_INIT() call", ["&buckets[1].lock"])]
    assert all(h.returns_void for h in found.helpers.values())
    # passed to an expression that is no statement macro, the init's value is used for more: none
    assert infer({"h.h": "#define W(x) ((x) + 1)\n#define INIT(m) W(pthread_mutex_init((m), NULL))\n",
                  "u.c": "void g(void) { INIT(&q); }\n"}).calls == []


@pytest.mark.parametrize("other_branch", [
    "#define my_init(m, a) pthread_mutex_init(&(m)->inner, (a))",  # another pthread shape: which one?
    "#define my_init(m, a) tree_init((m))",  # a function of the tree: perhaps a helper of its own
])
def test_a_macro_defined_otherwise_in_a_branch_that_may_create_locks_is_none(other_branch):
    header = THR_H.replace("#define my_init(m, a) ((void)(a), InitializeCriticalSection((m)), 0)", other_branch)
    texts = {"thr.h": header, "uses.c": USES_C, "tree.c": "int tree_init(void *m) { return m != 0; }\n"}
    calls, found = _calls(texts)
    assert "my_init" not in found.helpers and "DEFAULT_INIT() call (a macro for my_init())" not in {c[1] for c in calls}
    assert {c[1] for c in calls} == {"FIELD_INIT() call", "OBJECT_INIT() call"}


def test_a_helper_function_of_the_same_name_names_the_macros_init_site_too():
    """A debug build's function alternative: a call's entry must reach its lock in both builds."""
    header = "#include <pthread.h>\n#ifdef DEBUG\nint my_init(pthread_mutex_t *m, void *a);\n#else\n" \
             "#define my_init(m, a) pthread_mutex_init((m), (a))\n#endif\n"
    debug_c = "#include \"thr.h\"\n#ifdef DEBUG\n#include <stdio.h>\nint my_init(pthread_mutex_t *m, void *a)\n{\n" \
              "    if (!m) fprintf(stderr, \"no mutex\\n\");\n    return pthread_mutex_init(m, a);\n}\n#endif\n"
    calls, found = _calls({"thr.h": header, "debug.c": debug_c, "uses.c": USES_C.replace("FIELD_INIT(p)", "0")
                           .replace("OBJECT_INIT(q.mu)", "0").replace(" | DEFAULT_INIT(&b[2])", "")})
    helper = found.helpers["my_init"]
    assert not helper.macro and helper.locks[0].inits == [("debug.c", 7), ("thr.h", 5)]
    assert [c[1] for c in calls] == ["my_init() call", "my_init() call"]


ORIGINAL_C = """#include "thr.h"
struct q { pthread_mutex_t lock; long n; };
static pthread_mutex_t m;
void pop(struct q *x)
{
    pthread_mutex_lock(&m);
    {   long n = x->n--;
        pthread_mutex_unlock(&m);
        use(n);
    }
}
void setup(struct q *x) { my_init(&x->lock, NULL); }
"""

# what a conditional extraction leaves of pop(): the section's call site under the region's #if,
# the region as written under #else, each branch opening a block the code after it closes
TRANSFORMED_C = """#include "thr.h"
struct q { pthread_mutex_t lock; long n; };
static pthread_mutex_t m;
void pop(struct q *x)
{
#if USE_THREADS
{ long n;
    {
        struct rclify_ctx_pop_1 c = { .x = &x, .n = &n };
        (void)RCL_EXECUTE(&m, rclify_cs_pop_1, &c);
    }
#else
    pthread_mutex_lock(&m);
    {   long n = x->n--;
        pthread_mutex_unlock(&m);
#endif
        use(n);
    }
}
void setup(struct q *x) { my_init(&x->lock, NULL); }
"""


def test_a_call_after_a_conditional_call_site_is_found_and_wrapped():
    """The branches of a conditional call site each open a block: read with both, the braces of
    the rest of the file did not balance, no function after it was found, and its helper calls
    kept the helper's configuration (zstd's POOL_create_advanced, after POOL_thread's sections)."""
    found = infer({"thr.h": THR_H, "q.c": ORIGINAL_C})
    (call,) = found.calls
    assert call.function == "setup"
    call.helper.locks[0].init_ids = ["thr.h:m"]
    site = LockSite("q.c:x->lock", "helper_call", call.file, call.line, call.function, "", "")
    site.helper_calls = [lock_helpers.CallLock(call, call.helper.locks[0], "&x->lock")]
    text, unwrapped = wrap_calls(TRANSFORMED_C, "q.c", [site])
    assert unwrapped == []
    assert 'RCL_LOCK_SITE(my_init(&x->lock, NULL), RCL_SITE("thr.h:m", RCLIFY_LOCK_q_c_x_lock))' in text
    # the groups whose branches balance their braces are read whole (both branches' calls seen)
    code = "#ifdef A\nf();\n#else\ng();\n#endif\n#ifdef B\nvoid h(void) {\n#else\nvoid h(int x) {\n#endif\n}\n"
    assert one_branch_where_unbalanced(code).split("\n") == [
        "#ifdef A", "f();", "#else", "g();", "#endif", "#ifdef B", "void h(void) {", " " * len("#else"), " " * len("void h(int x) {"), "#endif", "}", ""]


def _build(tree: Path, *defines: str) -> None:
    proc = build(tree, ["-Werror", *defines, *runtime_build.cflags()], runtime_build.libs())
    assert proc.returncode == 0, proc.stderr[-3000:]


def _run(tree: Path, **env) -> subprocess.CompletedProcess:
    return run_expected(tree, CORPUS / "expected.txt", **env)


USE_IDS = {"main.c:stats_lock", "main.c:pool->mutex", "main.c:buckets[].lock", "main.c:log_lock", "main.c:done_lock"}


@pytest.fixture(scope="module")
def transformed(tmp_path_factory):
    runtime_build.build_runtime()
    tree = tmp_path_factory.mktemp("init-macros") / "tree"
    shutil.copytree(CORPUS, tree)
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "-q"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tree


def test_each_use_of_an_init_macro_is_an_entry(transformed):
    entries = config_entries(transformed)
    # the macros' (and the debug function's) own init sites stay, for uses without an entry
    assert set(entries) == USE_IDS | {"threads.h:m", "threads.h:m#2", "threads.h:m#3", "threads.h:b->lock", "threads.c:m"}
    assert "thr_mutex_init() call at main.c:70 in setup()" in entries["main.c:pool->mutex"].description
    assert "set up by OBJECT_LOCK_INIT() at main.c:73" in entries["main.c:log_lock"].description
    # two #define bodies initialising `m` in one header: each rewritten with its own entry
    header = (transformed / "threads.h").read_text()
    assert "pthread_mutex_init((m), (attr))" not in header
    assert "rcl_mutex_init((m), (attr), RCL_CONFIG_REF(RCLIFY_LOCK_threads_h_m))" in header
    assert "rcl_mutex_init(&(m), NULL, RCL_CONFIG_REF(RCLIFY_LOCK_threads_h_m_2))" in header
    main = (transformed / "main.c").read_text()
    assert 'RCL_LOCK_SITE(OBJECT_LOCK_INIT(log_lock), RCL_SITE("threads.h:m#2", RCLIFY_LOCK_main_c_log_lock))' in main
    # a macro with no value (its init cast to void) is wrapped as a void helper
    assert 'RCL_LOCK_SITE_VOID(QUIET_LOCK_INIT(&done_lock), RCL_SITE("threads.h:m#3", RCLIFY_LOCK_main_c_done_lock))' in main
    assert 'RCL_SITE("threads.c:m", RCLIFY_LOCK_main_c_pool_mutex), RCL_SITE("threads.h:m", ' \
           'RCLIFY_LOCK_main_c_pool_mutex)' in main


@pytest.mark.parametrize("defines", [(), ("-DTHREADS_DEBUG",)], ids=["macro", "debug-function"])
def test_a_lock_config_edit_reaches_only_its_uses_lock(transformed, tmp_path, defines):
    tree = tmp_path / "tree"
    shutil.copytree(transformed, tree)
    set_algorithm(tree, "main.c:pool->mutex", "rcl")  # 10000 sections; stats_lock (the other thr_mutex_init) as many
    set_algorithm(tree, "main.c:log_lock", "rcl")  # 1000
    _build(tree, *defines)
    stats = _run(tree, RCLIFY_STATS="1").stderr
    rows = dict(re.findall(r"^(main\.c:\S+)\s+\d+\s+(\d+)\s+\d+\s+\d+$", stats, re.M))
    assert rows == {"main.c:pool->mutex": "10000", "main.c:log_lock": "1000"}, stats


def test_runtime_and_preload_profiles_name_the_uses_and_assign_maps_them(transformed, tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(transformed, tree)
    _build(tree)
    out = tree / "profile.json"
    _run(tree, RCLIFY_LOCKS="*=profile", RCLIFY_PROFILE_OUT=str(out))
    assert {l["id"]: l["acquisitions"] for l in json.loads(out.read_text())["locks"]} == {
        "main.c:stats_lock": 10000, "main.c:pool->mutex": 10000, "main.c:buckets[].lock": 10000,
        "main.c:log_lock": 1000, "main.c:done_lock": 4}

    original = tmp_path / "original"
    shutil.copytree(CORPUS, original)
    subprocess.run(["cc", "-O1", "-g", "-pthread", "threads.c", "main.c", "-o", "prog"], cwd=original, check=True,
                   timeout=120)
    prof = profile.run([str(original / "prog")])
    lines = (CORPUS / "main.c").read_text().splitlines()
    line_of = lambda text: next(n for n, line in enumerate(lines, 1) if text in line)  # noqa: E731
    assert {l["id"]: l.get("expression") for l in prof["locks"]} == {
        f"main.c:{line_of('thr_mutex_init(&stats_lock')}": "&stats_lock",
        f"main.c:{line_of('thr_mutex_init(&pool->mutex')}": "&pool->mutex",
        f"main.c:{line_of('BUCKET_INIT(&buckets[k])')}": "&buckets[k].lock",
        f"main.c:{line_of('OBJECT_LOCK_INIT(log_lock)')}": "&log_lock",
        f"main.c:{line_of('QUIET_LOCK_INIT(&done_lock)')}": "&done_lock"}
    matching = lock_id_matching.match_ids(prof, list(config_entries(transformed)))
    assert not matching.unmatched and not matching.ambiguous
    assert sorted(matching.to_config.values()) == sorted(USE_IDS)
