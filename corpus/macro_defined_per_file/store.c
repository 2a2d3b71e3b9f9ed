/* ... and extstore.c defines its own STAT_L, over another struct's stats_mutex: each file's
 * sections must be read with the definition that file sees. */
#include <pthread.h>

#include "store.h"

#define STAT_L(e) pthread_mutex_lock(&e->stats_mutex);
#define STAT_UL(e) pthread_mutex_unlock(&e->stats_mutex);

struct store {
    pthread_mutex_t stats_mutex;
    long pages;
};

static struct store the_store = {PTHREAD_MUTEX_INITIALIZER, 0};

void store_write(int pages)
{
    struct store *e = &the_store;
    STAT_L(e);
    e->pages += pages;
    STAT_UL(e);
}

long store_pages(void)
{
    struct store *e = &the_store;
    long n;
    STAT_L(e);
    n = e->pages;
    STAT_UL(e);
    return n;
}
