/* Sections through the header's wrappers in another file than main's. */
#include "shared.h"

void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        int slot = (int)((id * 3 + i) % 8);
        LOCK_TAKE(&table_lock);
        table_lock.held++;
        if (table[slot] < 0) { /* never: every slot only grows */
            LOCK_GIVE(&table_lock);
            return (void *)1;
        }
        table[slot] += 2;
        LOCK_GIVE(&table_lock);
        lock_add(&table_lock, &total, 1);
    }
    return NULL;
}
