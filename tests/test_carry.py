"""carry(): a user's edits of a transformed file replayed on its original, or refused."""

import pytest

from rclify.transform.carry import Unmappable, carry

ORIGINAL = """\
#include <pthread.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long n;

static void add(long k)
{
    pthread_mutex_lock(&m);
    n += k;
    n++;
    pthread_mutex_unlock(&m);
}

int main(void)
{
    add(1);
    return 0;
}
"""

# what rclify writes for it (templates/extract/): a section function before add(), its call in add()
WRITTEN = """\
#include <pthread.h>
#include "lock_config.h"

static rcl_mutex_t m = RCL_MUTEX_INITIALIZER(RCLIFY_LOCK_a_c_m);
static long n;

/* rclify: critical section of add() (a.c:8), run under &m */
struct rclify_ctx_add_1 {
    long k;
};
#line 8
static int rclify_cs_add_1(void *rclify_arg)
{
    struct rclify_ctx_add_1 *rclify_ctx = rclify_arg;
    (void)rclify_ctx;
#line 8

    n += rclify_ctx->k;
    n++;
    return 0;
}

#line 6
static void add(long k)
{
    {

        struct rclify_ctx_add_1 rclify_ctx_add_1 = { .k = k };

        (void)RCL_EXECUTE(&m, rclify_cs_add_1, &rclify_ctx_add_1);
    }
#line 11

}

int main(void)
{
    add(1);
    return 0;
}
"""

NEW_FN = "\nvoid reset(void)\n{\n    pthread_mutex_lock(&m);\n    n = 0;\n    pthread_mutex_unlock(&m);\n}\n"


def edited(old: str, new: str, text: str = WRITTEN) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def test_nothing_edited_gives_the_original():
    assert carry(ORIGINAL, WRITTEN, WRITTEN) == ORIGINAL


@pytest.mark.parametrize("old,new", [
    ("}\n\nint main(void)", "}\n" + NEW_FN + "\nint main(void)"),  # between two functions of the user
    ("    return 0;\n}\n\n#line 6", "    return 0;\n}\n" + NEW_FN + "\n#line 6"),  # after a generated one
    ("/* rclify: critical", NEW_FN.lstrip("\n") + "\n/* rclify: critical"),  # before it
])
def test_a_new_function_goes_where_it_was_added(old, new):
    result = carry(ORIGINAL, WRITTEN, edited(old, new))
    assert result.count("void reset(void)") == 1 and "rcl" not in result
    assert result.index("static long n;") < result.index("void reset(void)") < result.index("int main")
    if old.startswith("}"):
        assert result.index("add(long k)") < result.index("void reset(void)")
    else:
        assert result.index("void reset(void)") < result.index("add(long k)")


def test_appended_code_is_appended():
    assert carry(ORIGINAL, WRITTEN, WRITTEN + NEW_FN) == ORIGINAL + NEW_FN


def test_a_line_of_a_section_body_edits_the_region():
    current = edited("    n++;\n    return 0;", "    n--;\n    return 0;")
    assert carry(ORIGINAL, WRITTEN, current) == ORIGINAL.replace("    n++;\n", "    n--;\n")


def test_a_statement_after_the_call_goes_after_the_unlock():
    current = edited("    }\n#line 11\n", "    }\n    n *= 2;\n#line 11\n")
    assert carry(ORIGINAL, WRITTEN, current) == ORIGINAL.replace(
        "    pthread_mutex_unlock(&m);\n", "    pthread_mutex_unlock(&m);\n    n *= 2;\n")


def test_a_statement_before_the_call_goes_before_the_lock():
    current = edited("{\n    {\n\n        struct", "{\n    n /= 2;\n    {\n\n        struct")
    assert carry(ORIGINAL, WRITTEN, current) == ORIGINAL.replace(
        "{\n    pthread_mutex_lock(&m);\n", "{\n    n /= 2;\n    pthread_mutex_lock(&m);\n")


def test_deleting_a_function_deletes_its_region_and_section():
    start, end = WRITTEN.index("/* rclify: critical"), WRITTEN.index("int main")
    result = carry(ORIGINAL, WRITTEN, WRITTEN[:start] + WRITTEN[end:])
    assert "add(long k)" not in result and "pthread_mutex_lock" not in result
    assert result.startswith("#include <pthread.h>\n\nstatic pthread_mutex_t m") and "int main" in result


@pytest.mark.parametrize("old,new,why", [
    ("    n += rclify_ctx->k;\n", "    n += 2 * rclify_ctx->k;\n", "names rclify_ctx"),
    ("static rcl_mutex_t m", "static volatile rcl_mutex_t m", "names rcl_mutex_t"),
    ("    (void)rclify_ctx;\n#line 8\n", "    (void)rclify_ctx;\n    n = 0;\n#line 8\n", "inserts into the code"),
    ("        (void)RCL_EXECUTE(&m, rclify_cs_add_1, &rclify_ctx_add_1);\n", "", "edits part of the code"),
    ("    n++;\n    return 0;\n}\n", "    n++;\n}\n", "edits part of the code"),
])
def test_edits_of_generated_or_rewritten_code_are_refused(old, new, why):
    with pytest.raises(Unmappable, match=why):
        carry(ORIGINAL, WRITTEN, edited(old, new))


def test_crlf_and_form_feeds_survive():
    original = ORIGINAL.replace("int main", "\f\nint main")
    written = WRITTEN.replace("int main", "\f\nint main")
    assert carry(original, written, written + "/* x */\r\n") == original + "/* x */\r\n"
