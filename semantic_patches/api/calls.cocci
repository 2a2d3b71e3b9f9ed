/// Moves the remaining pthread mutex / condition variable calls onto the rclify runtime: lock,
/// unlock, trylock, timedlock and clocklock calls that were not extracted into critical-section
/// functions ("hybrid" regions), destroy, and every pthread_cond_* call (clockwait included)
/// become their rcl_* equivalent (same arguments), and so do the pthread_rwlock_* calls (rclify.h's
/// rcl_rwlock_*; pthread_rwlock_init as pthread_mutex_init below);
/// pthread_mutex_init(E, A) becomes rcl_mutex_init(E, A, RCL_CONFIG_REF(RCLIFY_LOCK_<id>)) with the
/// id of E's lock site (rclify/lock_identity/lock_table.py; JSON file named by $RCLIFY_LOCK_SITES; NULL, the
/// default configuration, when E matches no site); pthread_rwlock_init(E, A) becomes
/// rcl_rwlock_init(E, A, ...) the same way (one rule: spatch lets only the first rule that
/// transforms inherit a position).  Calls inside macro bodies are rewritten too.
/// pthread_mutex_consistent(_np) and pthread_mutex_{get,set}prioceiling become rcl_mutex_consistent
/// and rcl_mutex_{get,set}prioceiling (the runtime runs a robust or priority-protocol mutex on its
/// pthread mutex); where rclify can keep the lock a pthread mutex of its own (rclify/transform/
/// kept_posix.py), it hides those calls from this patch instead.  pthread_mutexattr_* stay
/// (rcl_mutex_init takes a pthread_mutexattr_t) and are reported; pthread_rwlockattr_* stay too.
//
// Confidence: High
// Options: --no-includes --in-place; PYTHONPATH=semantic_patches/lib:. ; RCLIFY_LOCK_SITES=sites.json;
//          -D patch / -D report; -D json for rclify's records
// Comments: a pthread function used as a value (a function pointer) is not rewritten.

virtual patch
virtual report
virtual json

@initialize:python@
@@
import rclify_smpl
from rclify.lock_identity.lock_table import LockTable
TABLE = LockTable.from_json(rclify_smpl.env_json("RCLIFY_LOCK_SITES", []))

@script:python depends on json@
@@
rclify_smpl.set_mode("json")

// ---- pthread_mutex_init, pthread_rwlock_init: the configuration of the lock site ------------------

@mutex_init_call@
identifier init =~ "^pthread_(mutex|rwlock)_init$";
expression E, A;
position p;
@@
init@p(E, A)

@script:python init_config@
init << mutex_init_call.init;
p << mutex_init_call.p;
rcl_init;
cfg;
@@
name, args, _ = rclify_smpl.call_at(p[0].file, int(p[0].line), int(p[0].column))
site = TABLE.for_init(args[0] if args else "", p[0].file, rclify_smpl.function_of(p[0]), int(p[0].line))
coccinelle.rcl_init = "rcl_" + init[len("pthread_"):]
coccinelle.cfg = "RCL_CONFIG_REF(%s)" % site.macro if site else "NULL"
rclify_smpl.emit("mutex_init", p[0], text=init + "(" + ", ".join(args) + ")",
                 lock_id=site.lock_id if site else "", function=rclify_smpl.function_of(p[0]))

// ---- calls with an rcl_* twin ------------------------------------------------------------------

@twin_call@
identifier fn =~ "^pthread_(mutex_(lock|unlock|trylock|timedlock|clocklock|destroy|consistent|consistent_np|getprioceiling|setprioceiling)|cond_(wait|timedwait|clockwait|signal|broadcast|init|destroy)|rwlock_(rdlock|wrlock|tryrdlock|trywrlock|timedrdlock|timedwrlock|clockrdlock|clockwrlock|unlock|destroy))$";
expression list es;
position p;
@@
fn@p(es)

@script:python twin@
fn << twin_call.fn;
p << twin_call.p;
rcl;
@@
coccinelle.rcl = "rcl_" + fn[len("pthread_"):]
rclify_smpl.emit("call", p[0], name=fn, text=fn + " -> " + coccinelle.rcl, function=rclify_smpl.function_of(p[0]))

@attr_call@
identifier fn =~ "^pthread_mutexattr_";
position p;
@@
fn@p(...)

@script:python@
fn << attr_call.fn;
p << attr_call.p;
@@
rclify_smpl.emit("attr", p[0], name=fn, text=fn, function=rclify_smpl.function_of(p[0]),
                 message="kept: rcl_mutex_init takes a pthread_mutexattr_t")

// ---- the rewrites: after every matching and reporting rule, whose positions they inherit (rules
// after a transformation would see spatch's re-parsed intermediate file, not the original) ----

@depends on patch@
identifier mutex_init_call.init;
expression mutex_init_call.E, mutex_init_call.A;
position mutex_init_call.p;
identifier init_config.rcl_init, init_config.cfg;
@@
- init@p(E, A)
+ rcl_init(E, A, cfg)

// (no position here: spatch cannot inherit one over the modifications of the rule above; every
// call of fn is renamed, which is what the position would select anyway)
@depends on patch@
identifier twin_call.fn, twin.rcl;
expression list es;
@@
- fn(es)
+ rcl(es)

