/*
 * The registry of lock algorithms, indexed by enum rcl_algorithm.
 *
 * Each algorithm is one file (alg_<name>.c) defining one `rcl_ops_<name>`; the references here
 * are strong so that linking against librclify.a pulls every algorithm's object in.
 */
#include <stddef.h>

#include "core/lock_ops.h"

extern const struct rcl_lock_ops rcl_ops_posix;
extern const struct rcl_lock_ops rcl_ops_rcl;
extern const struct rcl_lock_ops rcl_ops_profile;

const struct rcl_lock_ops *const rcl_algorithms[RCL_ALG_COUNT] = {
    [RCL_ALG_UNRESOLVED] = NULL,
    [RCL_ALG_POSIX] = &rcl_ops_posix,
    [RCL_ALG_RCL] = &rcl_ops_rcl,
    [RCL_ALG_PROFILE] = &rcl_ops_profile,
};

static const char *const names[RCL_ALG_COUNT] = {
    [RCL_ALG_UNRESOLVED] = "unresolved",
    [RCL_ALG_POSIX] = "posix",
    [RCL_ALG_RCL] = "rcl",
    [RCL_ALG_PROFILE] = "profile",
};

const char *rcl_algorithm_name(int alg)
{
    if (alg < 0 || alg >= RCL_ALG_COUNT)
        return "unknown";
    return names[alg];
}
