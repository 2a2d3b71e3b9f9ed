/* What the build chose (a configure script would write this): debug level 1. */
#define LOCK_DEBUG 1
