#ifndef SHARED_H
#define SHARED_H

#include "lock.h"

#define NTHREADS 4
#define ITERS 4000

extern struct lock table_lock;
extern long table[8];
extern long total;

#endif /* SHARED_H */
