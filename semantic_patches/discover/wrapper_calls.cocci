/// Finds the call sites of lock wrappers: the macros and functions that rclify/discover.py inferred
/// from pthread_sites.cocci's output (`LOCK(m)`, memcached's `mutex_lock(x)`, `item_lock(hv)`).
/// The wrapper names come from the file named by $RCLIFY_WRAPPERS (a JSON list of names).
//
// Confidence: High (every call of a wrapper name is reported; the names are only those whose
//             definition was recognised)
// Options: --no-includes --very-quiet; PYTHONPATH=semantic_patches/lib:. ;
//          RCLIFY_WRAPPERS=names.json; -D json for rclify, -D report by hand
// Comments: a local function or variable that shadows a wrapper's name would be reported too.
//           A wrapper used as a function pointer (not called) is not a site.

virtual report
virtual json

@initialize:python@
@@
import rclify_smpl
WRAPPERS = frozenset(rclify_smpl.env_json("RCLIFY_WRAPPERS", []))

@script:python depends on json@
@@
rclify_smpl.set_mode("json")

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
