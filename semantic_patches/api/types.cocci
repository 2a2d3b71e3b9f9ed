/// Retypes pthread mutexes and condition variables onto the rclify runtime:
/// pthread_mutex_t -> rcl_mutex_t, pthread_cond_t -> rcl_cond_t, pthread_rwlock_t -> rcl_rwlock_t
/// wherever the type is written
/// (definitions, struct fields, parameters, pointers, casts, sizeof, typedefs).
/// pthread_mutexattr_t, pthread_condattr_t and pthread_rwlockattr_t stay: the inits take them.
//
// Confidence: High
// Options: --no-includes --in-place (rclify works on copies); PYTHONPATH=semantic_patches/lib:. ;
//          -D patch to rewrite, -D report to list the places; add -D json for rclify's records
// Comments: the type inside a #define body that is not an expression or statement (e.g.
//           `#define DECL(n) static pthread_mutex_t n`) is left to rclify/transform/rewrite_api.py's
//           #define pass.  A mutex handed to a library expecting a pthread_mutex_t * would no
//           longer type-check: the compiler reports it.

virtual patch
virtual report
virtual json

@initialize:python@
@@
import rclify_smpl

@script:python depends on json@
@@
rclify_smpl.set_mode("json")

@mutex_type depends on patch@
typedef pthread_mutex_t, rcl_mutex_t;
@@
- pthread_mutex_t
+ rcl_mutex_t

@rwlock_type depends on patch@
typedef pthread_rwlock_t, rcl_rwlock_t;
@@
- pthread_rwlock_t
+ rcl_rwlock_t

@cond_type depends on patch@
typedef pthread_cond_t, rcl_cond_t;
@@
- pthread_cond_t
+ rcl_cond_t

// report mode: every declaration of a mutex or condition variable, pointer or not
@type_use depends on report@
typedef pthread_mutex_t, pthread_cond_t;
identifier x;
position p;
@@
(
pthread_mutex_t@p x;
|
pthread_cond_t@p x;
|
pthread_mutex_t@p *x;
|
pthread_cond_t@p *x;
)

@script:python depends on report@
p << type_use.p;
x << type_use.x;
@@
rclify_smpl.emit("type", p[0], name=x, text=x, function=rclify_smpl.function_of(p[0]))
