/// Finds every use of the pthread mutex and condition variable API in C code: lock, unlock and
/// trylock calls (whatever statement or expression they sit in: `if (pthread_mutex_lock(&m) != 0)`,
/// `(void)pthread_mutex_unlock(&m);`, `{pthread_mutex_lock(&(t->locks[i]));}`, macro bodies),
/// init/destroy, cond_* calls, other pthread_mutex_*/pthread_mutexattr_* calls, mutex and cond
/// definitions (statically initialised or not, file or function scope, arrays) and struct fields,
/// and functions whose whole body is one call of one argument (lock wrapper candidates such as
/// memcached's `void item_lock(uint32_t hv) { mutex_lock(&item_locks[...]); }`).
/// It also reports the calls of the names listed in the JSON file named by $RCLIFY_WRAPPERS: the
/// lock macros and likely wrapper functions rclify/discover.py found beforehand, so that one
/// spatch run finds the wrappers' call sites too.  With -D wrapper_calls_only, only those calls
/// are reported (a second run for wrappers that were not listed).
//
// Confidence: High
// Options: --no-includes --very-quiet (system headers are not needed: pthread names are matched
//          by spelling); PYTHONPATH=semantic_patches/lib:. ; -D json for rclify, -D report by hand;
//          RCLIFY_WRAPPERS=names.json and -D wrapper_calls_only as above
// Comments: definitions through a typedef of pthread_mutex_t (`typedef pthread_mutex_t lock_t;
//           lock_t l;`) and multi-dimensional arrays are not found.  #define directives are read by
//           rclify/discover.py (SmPL cannot match statement-shaped macro bodies such as
//           do { ... } while (0)); calls inside macro bodies are found here.

virtual report
virtual json
virtual wrapper_calls_only

@initialize:python@
@@
import rclify_smpl
WRAPPERS = frozenset(rclify_smpl.env_json("RCLIFY_WRAPPERS", []))

@script:python depends on json@
@@
rclify_smpl.set_mode("json")

// ---- calls of the pthread mutex / cond API ---------------------------------------------------

@pthread_call depends on !wrapper_calls_only@
identifier fn =~ "^pthread_(mutex_[a-z_]+|mutexattr_[a-z_]+|cond_(wait|timedwait|clockwait|signal|broadcast|init|destroy))$";
position p;
@@
fn@p(...)

@script:python@
fn << pthread_call.fn;
p << pthread_call.p;
@@
name, args, _ = rclify_smpl.call_at(p[0].file, int(p[0].line), int(p[0].column))
rclify_smpl.emit("call", p[0], name=fn, args=args, function=rclify_smpl.function_of(p[0]),
                 text=fn + "(" + ", ".join(args) + ")")

// ---- definitions ------------------------------------------------------------------------------

@mutex_def depends on !wrapper_calls_only@
identifier x;
position p;
initializer I;
expression n;
@@
(
pthread_mutex_t x@p;
|
pthread_mutex_t x@p = I;
|
pthread_mutex_t x@p[n];
|
pthread_mutex_t x@p[n] = I;
|
pthread_mutex_t x@p[] = I;
)

@script:python@
x << mutex_def.x;
p << mutex_def.p;
I << mutex_def.I = "";
n << mutex_def.n = "";
@@
element = p[0].current_element
rclify_smpl.emit("definition", p[0], type="pthread_mutex_t", name=x,
                 function="" if element in (x, "something_else") else element,
                 init=str(I), array=bool(str(n)) or "[" in rclify_smpl.lines(p[0].file)[int(p[0].line) - 1][int(p[0].column):].split("=")[0],
                 text=x)

@cond_def depends on !wrapper_calls_only@
identifier x;
position p;
initializer I;
@@
(
pthread_cond_t x@p = I;
|
pthread_cond_t x@p[...] = I;
)

@script:python@
x << cond_def.x;
p << cond_def.p;
I << cond_def.I;
@@
element = p[0].current_element
rclify_smpl.emit("definition", p[0], type="pthread_cond_t", name=x,
                 function="" if element in (x, "something_else") else element, init=str(I), array=False,
                 text=x)

// ---- struct fields ----------------------------------------------------------------------------

@mutex_field depends on !wrapper_calls_only@
identifier s, x;
type T;
position p;
expression n;
@@
(
struct s { ... pthread_mutex_t x@p; ... };
|
struct s { ... pthread_mutex_t x@p[n]; ... };
|
typedef struct { ... pthread_mutex_t x@p; ... } T;
|
typedef struct { ... pthread_mutex_t x@p[n]; ... } T;
)

@script:python@
x << mutex_field.x;
p << mutex_field.p;
s << mutex_field.s = "";
T << mutex_field.T = "";
@@
rclify_smpl.emit("field", p[0], type="pthread_mutex_t", name=x, container=("struct " + s) if s else T,
                 function="", text=x)

// ---- lock wrapper candidates: a function whose body is one call of one argument ----------------

@one_call_function depends on !wrapper_calls_only@
identifier fn, callee;
expression E;
type T;
position p, q;
@@
(
T fn@p(...) { callee@q(E); }
|
T fn@p(...) { return callee@q(E); }
|
T fn@p(...) { (void)callee@q(E); }
)

@script:python@
fn << one_call_function.fn;
callee << one_call_function.callee;
p << one_call_function.p;
q << one_call_function.q;
@@
name, args, _ = rclify_smpl.call_at(q[0].file, int(q[0].line), int(q[0].column))
src = rclify_smpl.text(p[0].file)
head = src[rclify_smpl.offset(p[0].file, int(p[0].line), int(p[0].column)):]
params = head[head.index("(") + 1 : head.index(")")] if "(" in head and ")" in head else ""
rclify_smpl.emit("one_call_function", p[0], name=fn, callee=callee, args=args,
                 params=rclify_smpl.squash(params), text=fn)

// ---- calls of listed lock macros / wrapper functions ----------------------------------------------

// spatch 1.1.1 refuses to pass a metavariable with a script constraint on to a script rule: the
// name is read back from the source at the position.
@wrapper_call@
identifier fn : script:python () { fn in WRAPPERS };
position p;
@@
fn@p(...)

@script:python@
p << wrapper_call.p;
@@
name, args, _ = rclify_smpl.call_at(p[0].file, int(p[0].line), int(p[0].column))
rclify_smpl.emit("wrapper_call", p[0], name=name, args=args, function=rclify_smpl.function_of(p[0]),
                 text=name + "(" + ", ".join(args) + ")")
