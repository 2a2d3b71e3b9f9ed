"""Which locals may be reached other than by their name (rclify/transform/aliasing.py): the facts
the capture and hoisting rules (plan.py, hoisting.py) stand on (docs/transform.md, "Extraction")."""

import clang.cindex as ci

from rclify.ctext import cparse
from rclify.transform.aliasing import address_taken
from rclify.transform.thread_safe_calls import external_cause

SOURCE = r"""
#include <stddef.h>
struct pair { int a[4]; int b; };
struct holder { int *p; };
#define ADDR(x) (&(x))
#define TAKE(x) sink(ADDR(x))
void sink(int *p);

void f(int *q, int v[4], struct pair byval)
{
    int plain = 1, read_only = 2, through_macro = 3, incremented = 4;
    int direct, in_struct, member_target, subscripted_elem;
    int array[3], decayed[3], sized[3];
    struct pair st, st2;
    int *p = &direct;
    struct holder h = { &in_struct };
    int *pp;
    plain = read_only + 1;
    incremented++;
    ++incremented;
    TAKE(through_macro);
    pp = &st.b;
    pp = st2.a;
    pp = &array[1];
    array[2] = 5;
    pp = decayed;
    (void)sizeof(sized);
    sized[0] = 1;
    pp = &byval.b;
    q = v;
    (void)p; (void)h; (void)member_target; (void)subscripted_elem; (void)pp; (void)q;
}
"""


def _taken(tmp_path) -> set[str]:
    source = tmp_path / "f.c"
    source.write_text(SOURCE)
    parsed = cparse.parse(source, [])
    fn = next(c for c in parsed.tu.cursor.get_children() if c.spelling == "f" and c.is_definition())
    taken = address_taken(fn)
    return {n.spelling for n in fn.walk_preorder()
            if n.kind in (ci.CursorKind.VAR_DECL, ci.CursorKind.PARM_DECL) and n.hash in taken}


def test_address_taken_reads_the_whole_function_macros_expanded(tmp_path):
    taken = _taken(tmp_path)
    # &x, through a macro, in an initializer list, of a member, of an element, an array decaying,
    # a by-value struct parameter's member
    assert {"direct", "in_struct", "through_macro", "st", "st2", "array", "decayed", "byval"} <= taken
    # read, assigned, incremented (p++ is no address-of), subscripted, under sizeof; a parameter
    # declared as an array is a pointer: using it takes no address
    assert not taken & {"plain", "read_only", "incremented", "sized", "member_target", "subscripted_elem",
                        "v", "q", "p", "pp", "h"}


def test_frame_builtins_never_run_on_a_server():
    assert external_cause("__builtin_memcpy") is None
    # va_start .. va_end work on the frame of the function that calls them, alive while it runs
    assert external_cause("__builtin_va_start") is None
    for name in ("__builtin_alloca", "__builtin_alloca_with_align", "__builtin_frame_address",
                 "__builtin_return_address", "__builtin_stack_save"):
        assert external_cause(name) is not None, name
