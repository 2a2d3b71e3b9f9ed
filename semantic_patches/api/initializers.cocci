/// Rewrites static initializers onto the rclify runtime, naming each lock's configuration:
///   PTHREAD_MUTEX_INITIALIZER                -> RCL_MUTEX_INITIALIZER(RCLIFY_LOCK_<id>)
///   PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP   -> RCL_RECURSIVE_MUTEX_INITIALIZER(RCLIFY_LOCK_<id>)
///   PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP  -> RCL_ERRORCHECK_MUTEX_INITIALIZER(RCLIFY_LOCK_<id>)
///   PTHREAD_COND_INITIALIZER                 -> RCL_COND_INITIALIZER
///   PTHREAD_RWLOCK_INITIALIZER               -> RCL_RWLOCK_INITIALIZER(RCLIFY_LOCK_<id>)
/// <id> is the lock id of the definition the initializer belongs to (rclify/lock_identity/lock_table.py), read
/// from the JSON file named by $RCLIFY_LOCK_SITES.  An initializer that belongs to no known
/// definition (a struct initializer, a compound literal) gets RCL_CONFIG_DEFAULT and is reported.
/// PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP (a spinning hint) becomes RCL_MUTEX_INITIALIZER, reported.
//
// Confidence: High for `T m = INIT;` and `T m[N] = { INIT, ... };`; Moderate elsewhere (see above)
// Options: --no-includes --in-place; PYTHONPATH=semantic_patches/lib:. ; RCLIFY_LOCK_SITES=sites.json;
//          -D patch / -D report; -D json for rclify's records
// Comments: the owning definition is found from spatch's current_element and the nearest preceding
//           defined name in the same declaration.  Initializers inside #define bodies are handled
//           by rclify/transform/rewrite_api.py's #define pass (with RCL_CONFIG_DEFAULT).

virtual patch
virtual report
virtual json

@initialize:python@
@@
import rclify_smpl
from rclify.lock_identity.lock_table import LockTable
TABLE = LockTable.from_json(rclify_smpl.env_json("RCLIFY_LOCK_SITES", []))
RCL_NAME = {
    "PTHREAD_MUTEX_INITIALIZER": "RCL_MUTEX_INITIALIZER",
    "PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP": "RCL_RECURSIVE_MUTEX_INITIALIZER",
    "PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP": "RCL_ERRORCHECK_MUTEX_INITIALIZER",
    "PTHREAD_RWLOCK_INITIALIZER": "RCL_RWLOCK_INITIALIZER",
}

@script:python depends on json@
@@
rclify_smpl.set_mode("json")

@mutex_init_value@
identifier I =~ "^PTHREAD_((RECURSIVE_|ERRORCHECK_|ADAPTIVE_)?MUTEX_INITIALIZER(_NP)?|RWLOCK_INITIALIZER)$";
position p;
@@
I@p

@script:python config@
I << mutex_init_value.I;
p << mutex_init_value.p;
init;
cfg;
@@
src = rclify_smpl.text(p[0].file)
site = TABLE.for_initializer(p[0].file, p[0].current_element, src,
                             rclify_smpl.offset(p[0].file, int(p[0].line), int(p[0].column)))
coccinelle.init = RCL_NAME.get(I, "RCL_MUTEX_INITIALIZER")
coccinelle.cfg = site.macro if site else "RCL_CONFIG_DEFAULT"
if I not in RCL_NAME:
    rclify_smpl.emit("initializer_kind_dropped", p[0], name=I, text=I, lock_id=site.lock_id if site else "",
                     message=I + " has no rclify equivalent: RCL_MUTEX_INITIALIZER (a normal mutex)")
elif site is None:
    rclify_smpl.emit("anonymous_initializer", p[0], name=I, text=I,
                     message="not the initializer of a known definition: RCL_CONFIG_DEFAULT")
else:
    rclify_smpl.emit("initializer", p[0], name=I, text=I, lock_id=site.lock_id)

@cond_init_value@
identifier I = PTHREAD_COND_INITIALIZER;
position p;
@@
I@p

@script:python@
p << cond_init_value.p;
@@
rclify_smpl.emit("cond_initializer", p[0], text="PTHREAD_COND_INITIALIZER")

// ---- the rewrites: after every matching and reporting rule, whose positions they inherit (rules
// after a transformation would see spatch's re-parsed intermediate file, not the original) ----

@depends on patch@
identifier mutex_init_value.I;
position mutex_init_value.p;
identifier config.init, config.cfg;
@@
- I@p
+ init(cfg)

// (no position here: spatch cannot inherit one over the modifications of the rule above)
@depends on patch@
@@
- PTHREAD_COND_INITIALIZER
+ RCL_COND_INITIALIZER

