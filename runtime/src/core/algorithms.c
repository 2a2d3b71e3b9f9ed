/*
 * The registry of lock algorithms, indexed by enum rcl_algorithm, generated from
 * include/rclify/algorithms.def.
 *
 * Each algorithm defines one `rcl_ops_<name>` (in src/<family>/<name>.c); the references here
 * are strong so that linking against librclify.a pulls every algorithm's object in, and a
 * registered algorithm without its ops is a link error.
 */
#include <stddef.h>

#include "core/lock_ops.h"

/* Programs already compiled hold these numbers (rclify.h's fast paths test RCL_ALG_POSIX). */
_Static_assert(RCL_ALG_POSIX == 1 && RCL_ALG_RCL == 2 && RCL_ALG_PROFILE == 3,
               "algorithms.def: add new algorithms at the end, never reorder");

#define RCL_ALGORITHM(ENUM, name, description) extern const struct rcl_lock_ops rcl_ops_##name;
#include "rclify/algorithms.def"
#undef RCL_ALGORITHM

const struct rcl_lock_ops *const rcl_algorithms[RCL_ALG_COUNT] = {
    [RCL_ALG_UNRESOLVED] = NULL,
#define RCL_ALGORITHM(ENUM, name, description) [RCL_ALG_##ENUM] = &rcl_ops_##name,
#include "rclify/algorithms.def"
#undef RCL_ALGORITHM
};

static const char *const names[RCL_ALG_COUNT] = {
    [RCL_ALG_UNRESOLVED] = "unresolved",
#define RCL_ALGORITHM(ENUM, name, description) [RCL_ALG_##ENUM] = #name,
#include "rclify/algorithms.def"
#undef RCL_ALGORITHM
};

const char *rcl_algorithm_name(int alg)
{
    if (alg < 0 || alg >= RCL_ALG_COUNT)
        return "unknown";
    return names[alg];
}

unsigned rcl_algorithm_policies(int alg)
{
    if (alg <= RCL_ALG_UNRESOLVED || alg >= RCL_ALG_COUNT)
        return 0;
    return rcl_algorithms[alg]->policies | RCL_POLICY_BIT(RCL_WAIT_AUTO);
}
