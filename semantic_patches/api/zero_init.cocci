/// Gives a zero-initialised mutex definition that no pthread_mutex_init names its lock id:
///   pthread_mutex_t m;             ->  pthread_mutex_t m = RCL_MUTEX_INITIALIZER(RCLIFY_LOCK_<id>);
///   static pthread_mutex_t m = {0};   (a zero-filled mutex is glibc's unlocked default mutex)
///   static pthread_mutex_t m[N];   ->  (function-local) = { [0 ... (N) - 1] = RCL_MUTEX_INITIALIZER(...) }
/// (types.cocci then retypes them).  Without it such a lock runs as an anonymous lock, although
/// lock_config.h lists it.  Which definitions get one is the lock table's decision
/// (rclify/lock_identity/zero_initialised_locks.py: LockSite.zero_init == 'initializer', read from the JSON file
/// named by $RCLIFY_LOCK_SITES); file-scope arrays, declarations of several names and globals a
/// header defines get a constructor from rclify/transform/rewrite_api.py instead.
//
// Confidence: High for lone declarations; a declaration of several names is not rewritten
// Options: --no-includes --in-place; PYTHONPATH=semantic_patches/lib:. ; RCLIFY_LOCK_SITES=sites.json;
//          -D patch / -D report; -D json for rclify's records
// Comments: a separate patch from initializers.cocci because only the first transforming rule of a
//           patch may select by position (spatch 1.1.1: "position cannot be inherited over
//           modifications"); the three shapes are one disjunction for the same reason.

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

@zero_def@
identifier x;
initializer I;
expression n;
position p;
@@
(
pthread_mutex_t x@p;
|
pthread_mutex_t x@p = I;
|
pthread_mutex_t x@p[n];
)

@script:python zero_config@
x << zero_def.x;
I << zero_def.I = "";
n << zero_def.n = "";
p << zero_def.p;
zinit;
@@
site = TABLE.zero_initialised(p[0].file, p[0].current_element, x)
filled = I.replace(" ", "").replace(",", "")
if site is None or filled not in ("", "{0}", "{{0}}") or (n and not site.function):
    cocci.include_match(False)
elif n:
    coccinelle.zinit = "{ [0 ... (%s) - 1] = RCL_MUTEX_INITIALIZER(%s) }" % (n, site.macro)
    rclify_smpl.emit("zero_initializer", p[0], name=x, text=x, lock_id=site.lock_id,
                     message="%s: zero-initialised function-local static array: every element gets "
                             "RCL_MUTEX_INITIALIZER(%s) (a GNU C range designator)" % (x, site.macro))
else:
    coccinelle.zinit = "RCL_MUTEX_INITIALIZER(%s)" % site.macro
    rclify_smpl.emit("zero_initializer", p[0], name=x, text=x, lock_id=site.lock_id,
                     message="%s: zero-initialised: gets RCL_MUTEX_INITIALIZER(%s)" % (x, site.macro))

@depends on patch@
identifier zero_def.x;
position zero_def.p;
identifier zero_config.zinit;
initializer I;
expression n;
@@
(
- pthread_mutex_t x@p;
+ pthread_mutex_t x = zinit;
|
- pthread_mutex_t x@p = I;
+ pthread_mutex_t x = zinit;
|
- pthread_mutex_t x@p[n];
+ pthread_mutex_t x[n] = zinit;
)
