/// Finds every use of the pthread mutex and condition variable API in C code: lock, unlock and
/// trylock calls (whatever statement or expression they sit in: `if (pthread_mutex_lock(&m) != 0)`,
/// `(void)pthread_mutex_unlock(&m);`, `{pthread_mutex_lock(&(t->locks[i]));}`, macro bodies),
/// init/destroy, cond_* calls, other pthread_mutex_*/pthread_mutexattr_* calls, mutex and cond
/// definitions (statically initialised or not, file or function scope, arrays) and struct fields;
/// pthread_rwlock_* calls and definitions (rwlocks go onto the runtime's rcl_rwlock_t, their sections
/// stay hybrid) and pthread_spin_* calls, which rclify does not handle, so that they are reported.
/// Lock macros and wrapper functions are not this patch's business: rclify/transform/vocabulary.py
/// infers them (once, with libclang) and rclify/transform/regions.py reads their uses.
//
// Confidence: High
// Options: --no-includes --very-quiet (system headers are not needed: pthread names are matched
//          by spelling); PYTHONPATH=semantic_patches/lib:. ; -D json for rclify, -D report by hand
// Comments: definitions through a typedef of pthread_mutex_t (`typedef pthread_mutex_t lock_t;
//           lock_t l;`) and multi-dimensional arrays are not found.  Calls inside macro bodies
//           are found here (spatch keeps a #define body as tokens).

virtual report
virtual json
@initialize:python@
@@
import rclify_smpl

@script:python depends on json@
@@
rclify_smpl.set_mode("json")

// ---- calls of the pthread mutex / cond API ---------------------------------------------------

@pthread_call@
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

// ---- rwlocks (rwlock_api sites: retyped and renamed, their inits given a lock_config.h entry) and
// spinlocks (not handled: counted and listed in the report) ----

@other_lock_call@
identifier fn =~ "^pthread_(rwlock|spin)_[a-z_]+$";
position p;
@@
fn@p(...)

@script:python@
fn << other_lock_call.fn;
p << other_lock_call.p;
@@
name, args, _ = rclify_smpl.call_at(p[0].file, int(p[0].line), int(p[0].column))
rclify_smpl.emit("other_lock_call", p[0], name=fn, args=args, function=rclify_smpl.function_of(p[0]),
                 text=fn + "(" + ", ".join(args) + ")")

// ---- definitions ------------------------------------------------------------------------------

@mutex_def@
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

@cond_def@
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

@rwlock_def@
identifier x;
position p;
initializer I;
expression n;
@@
(
pthread_rwlock_t x@p;
|
pthread_rwlock_t x@p = I;
|
pthread_rwlock_t x@p[n];
|
pthread_rwlock_t x@p[n] = I;
|
pthread_rwlock_t x@p[] = I;
)

@script:python@
x << rwlock_def.x;
p << rwlock_def.p;
I << rwlock_def.I = "";
n << rwlock_def.n = "";
@@
element = p[0].current_element
rclify_smpl.emit("definition", p[0], type="pthread_rwlock_t", name=x,
                 function="" if element in (x, "something_else") else element,
                 init=str(I), array=bool(str(n)) or "[" in rclify_smpl.lines(p[0].file)[int(p[0].line) - 1][int(p[0].column):].split("=")[0],
                 text=x)

// ---- struct fields ----------------------------------------------------------------------------

@mutex_field@
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
