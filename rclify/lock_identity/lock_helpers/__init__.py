"""Lock helpers: functions of the program that create a lock for their caller, and their calls.

A lock created through a helper (libuv's `uv_mutex_init(&loop->wq_mutex)`, whose body calls
`pthread_mutex_init(mutex, NULL)`; an allocator `l = new_lock(0)` that mallocs a struct and
initialises its mutex) belongs to the helper's *caller*: each call is a lock of its own, with

  * its own lock_config.h entry (lock_table.py: kind 'helper_call', id 'file.c:' + the lock's
    expression at the call, as for a pthread_mutex_init there: `src/unix/loop.c:loop->wq_mutex`,
    `main.c:c->big->m` for `c->big = new_lock(0)`),
  * its configuration applied at run time: the call is wrapped in RCL_LOCK_SITE (rclify.h), so
    the locks the helper initialises during that call take the call site's configuration instead
    of the helper's own (wrap_calls(), run by rewrite_api.py),
  * its own name in a preload profile: rclify/profiling/preload_records.py walks past the frames
    of helpers, found with the same inference, to the call.

A function defined in the tree is a helper when
  * every lock it initialises (a pthread_mutex_init call, or a call of another helper) hangs from
    a parameter (`m`, `&p->lock`, `&p->locks[i]`) or from a pointer local it returns
    (`l = malloc(..); pthread_mutex_init(&l->m, ..); return l;`), and
  * it does nothing else than set that up: every function it calls allocates or clears memory,
    sets up mutex or condvar attributes or a condvar, reports a failure (abort, assert, perror,
    fprintf, exit, ...), is another helper, is a function-like macro of the tree calling only
    those, or is a function of the program that can neither create nor take a lock and is not
    handed the lock's object (pigz's my_malloc() and fail(); see inference._helper_of).
So libuv's `uv_loop_init(loop)`, which initialises loop->wq_mutex among much else, is not a
helper: the lock it creates is named where it calls uv_mutex_init.  A helper's own init sites keep
their entries: the configuration of the locks it creates where no call site has an entry (a call
through a function pointer, from a C++ file, from code extraction moved).

Read from the text (comments and strings blanked, directives blanked, so both branches of an #if
are seen, except where the branches open or close braces: then the first, see
preprocessor.one_branch_where_unbalanced; a transformed file's conditional call sites keep the
region as written under #else): it works on files libclang or spatch cannot parse, on transformed
files, and on the sources a profiled binary was built from.  Calls inside #define bodies and macro
helpers are not read (one lock per macro body, as before).

A function-like macro whose whole body is one call of a helper with the macro's parameters and
constants for arguments (pigz's `#define new_lock(a) new_lock_(a, __FILE__, __LINE__)`), or of
another such macro, is a macro alias of the helper (aliases()): each use of it is a call of the
helper (HelperCall.via names the macro), with its entry, wrapped at the use and found by the
profiler at the use's line.

A function-like macro of the tree whose whole body is one pthread_mutex_init of a parameter (zstd's
`#define ZSTD_pthread_mutex_init(a, b) pthread_mutex_init((a), (b))`, `#define LOCK_INIT(l)
pthread_mutex_init(&(l)->mu, NULL)`), or the truth of its result (libmicrohttpd's
`#define MHD_mutex_init_(pmutex) (! (pthread_mutex_init ((pmutex), NULL)))`) is an *init macro*
(init_macros()): a helper of its own whose init site is the one in its body; each use is a call of
it, with an entry of its own, wrapped at the use like a function helper's call, and found by the
preload profiler at the use's line (the init's frame line, there being no frame of the macro's).  Where a function of the same name is
defined too (a debug build's alternative under #if), a call reaches the function when that is a
helper (and then names the macro's init site beside the function's,
helper_macros.with_macro_inits()), else the macro.

The package, by step: model.py (the data types), c_text.py (functions, calls and targets read from
a file's text), lock_expressions.py (root(), pointer_to()), names.py (which definition a call
reaches), helper_macros.py (macro aliases, init macros), inference.py (infer(): which functions
are helpers), helper_calls.py (their calls; call_at()), lock_ids.py (link(), kept_call_sites():
the lock table's ids), wrapping.py (wrap_calls()).  Like lock_table.py, which imports it and
which spatch's embedded Python imports, it imports neither libclang nor jinja2.
"""

from rclify.lock_identity.lock_helpers.c_text import INIT, functions, macros
from rclify.lock_identity.lock_helpers.helper_calls import call_at
from rclify.lock_identity.lock_helpers.helper_macros import aliases, init_macros
from rclify.lock_identity.lock_helpers.inference import infer
from rclify.lock_identity.lock_helpers.lock_expressions import pointer_to, root
from rclify.lock_identity.lock_helpers.lock_ids import kept_call_sites, link
from rclify.lock_identity.lock_helpers.model import CallLock, Function, Helper, HelperCall, HelperLock, Helpers, MacroAlias
from rclify.lock_identity.lock_helpers.wrapping import wrap_calls

__all__ = [
    "INIT", "CallLock", "Function", "Helper", "HelperCall", "HelperLock", "Helpers", "MacroAlias",
    "aliases", "call_at", "functions", "infer", "init_macros", "kept_call_sites", "link", "macros",
    "pointer_to", "root", "wrap_calls",
]
