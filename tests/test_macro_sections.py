"""Sections inside statement macros (rclify/transform/macro_sections.py): which invocations are
extracted from their expansion and which stay hybrid (section-in-macro).  That the extracted
ones behave as the original under every algorithm is corpus/macro_with_lock_statement."""


import pytest
from transformed_source import compile_errors, transform_source

from rclify.transform.macro_sections import _statements, _unwrapped

SOURCE = r"""
#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, other = PTHREAD_MUTEX_INITIALIZER;
static long n, total;

#define WITH_LOCK(l, body) do { pthread_mutex_lock(&(l)); body; pthread_mutex_unlock(&(l)); } while (0)
#define FAIL(e) {                     \
    pthread_mutex_lock(&m);           \
    total = (e); /* the error */      \
    pthread_mutex_unlock(&m);         \
    goto out;                         \
}
#define WITH_JUMP(l) do { pthread_mutex_lock(&(l)); if (n) return; pthread_mutex_unlock(&(l)); } while (0)
#define WITH_CASE(l) do { pthread_mutex_lock(&(l)); switch (n) { case 1: n = 0; } pthread_mutex_unlock(&(l)); } while (0)
#define WITH_LOCAL(l) do { pthread_mutex_lock(&(l)); { long t = n; total += t; } pthread_mutex_unlock(&(l)); } while (0)
#define NESTED(l) do { pthread_mutex_lock(&(l)); pthread_mutex_lock(&other); n++; pthread_mutex_unlock(&other); pthread_mutex_unlock(&(l)); } while (0)
#ifdef DEBUG_LOCKS
#define COUNTED(l) do { pthread_mutex_lock(&(l)); n++; total++; pthread_mutex_unlock(&(l)); } while (0)
#else
#define COUNTED(l) do { pthread_mutex_lock(&(l)); n++; pthread_mutex_unlock(&(l)); } while (0)
#endif

struct store { pthread_mutex_t stats_mutex; struct { long page_allocs; } stats; };
#define STAT_INCR(e, stat, amount) { \
    pthread_mutex_lock(&e->stats_mutex); \
    e->stats.stat += amount; \
    pthread_mutex_unlock(&e->stats_mutex); \
}

void argument_section(void) { WITH_LOCK(m, n++); }
void conditional_expression(void) { WITH_LOCK(m, n = n > 3 ? 0 : n + 1); }
void member_parameter(struct store *e) { STAT_INCR(e, page_allocs, 1); }
int jump_after(int e) { if (e) FAIL(e); return 0; out: return -1; }
void jump_inside(void) { WITH_JUMP(m); }
void case_inside(void) { WITH_CASE(m); }
void local_inside(void) { WITH_LOCAL(m); }
void two_locks(void) { NESTED(m); }
void defined_per_configuration(void) { COUNTED(m); }
"""

EXTRACTED = {"argument_section", "conditional_expression", "jump_after", "member_parameter"}  # memcached's extstore STAT_INCR
HYBRID = {"jump_inside", "case_inside", "local_inside", "two_locks", "defined_per_configuration"}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tree = tmp_path_factory.mktemp("macros") / "tree"
    return tree, transform_source(tree, "macros.c", SOURCE)


@pytest.mark.parametrize("function", sorted(EXTRACTED))
def test_invocations_read_for_sure_are_extracted(report, function):
    tree, regions = report
    (region,) = regions[function]  # one region per invocation, whatever its expansion's blocks
    assert region["status"] == "extracted" and region["from_macro_expansion"], region
    text = (tree / "macros.c").read_text()
    assert f"rclify_cs_{function}_1" in text


def test_what_follows_the_unlock_runs_in_the_caller(report):
    tree, _ = report
    text = (tree / "macros.c").read_text()
    caller = text[text.index("int jump_after(int e)"):]
    assert caller.index("RCL_EXECUTE(") < caller.index("goto out;") < caller.index("out: return -1;")
    section = text[text.index("static int rclify_cs_jump_after_1"):text.index("int jump_after(int e)")]
    assert "goto" not in section and "total = " in section


@pytest.mark.parametrize("function", sorted(HYBRID))
def test_other_invocations_stay_hybrid(report, function):
    _, regions = report
    (region,) = regions[function]
    assert region["status"] == "hybrid" and region["reason"] == "section-in-macro", region


def test_the_transformed_file_compiles_in_both_configurations(report):
    tree, _ = report
    for defines in ([], ["-DDEBUG_LOCKS"]):
        assert compile_errors(tree / "macros.c", *defines) == ""


@pytest.mark.parametrize("body, statements", [
    ("do { lock(&m); x++; unlock(&m); } while (0)", ["lock(&m);", "x++;", "unlock(&m);"]),
    ("{ lock(a); if (x) { y(); } else z(); unlock(a); goto out; }",
     ["lock(a);", "if (x) { y(); } else z();", "unlock(a);", "goto out;"]),
    ("{ for (;;) { if (!n) break; n--; } do n++; while (n < 3); }",
     ["for (;;) { if (!n) break; n--; }", "do n++; while (n < 3);"]),
])
def test_expansions_read_as_statements(body, statements):
    assert _statements(_unwrapped(body)) == statements


def test_an_expansion_that_is_no_statement_list_is_not_read():
    assert _statements("x = (1;") is None


def test_a_declaration_in_an_expansion_used_as_an_if_body_keeps_it_hybrid(tmp_path):
    """The expansion's declaration is found wherever the invocation sits (here, an `if`'s body,
    whose region starts at a statement inside the expansion's block)."""
    source = SOURCE + "void local_in_if(int c) { if (c) WITH_LOCAL(m); }\n"
    (found,) = [transform_source(tmp_path / "t", "m.c", source, "--dry-run")["local_in_if"]]
    assert len(found) == 1 and found[0]["status"] == "hybrid" and found[0]["reason"] == "section-in-macro", found
