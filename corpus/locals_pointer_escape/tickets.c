/* Pointers to locals are dereferenced inside the region, and the address of
 * a local escapes to a helper called inside the region that fills it. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 2000

struct range { long first; int count; };

static pthread_mutex_t ticket_lock = PTHREAD_MUTEX_INITIALIZER;
static long next_ticket;
static long grants;

/* Called with ticket_lock held: hands out `want` tickets into *out. */
static void grant_tickets(int want, struct range *out, long *granted_total)
{
    out->first = next_ticket;
    out->count = want;
    next_ticket += want;
    *granted_total += want;
}

static void *run(void *p)
{
    long *result = p;
    long local_sum = 0;
    long *sum_ptr = &local_sum;        /* pointer to a local */
    struct range r;
    int calls = 0;
    int *callp = &calls;

    for (int i = 0; i < ITERS; i++) {
        int want = 1 + i % 3;

        pthread_mutex_lock(&ticket_lock);
        grant_tickets(want, &r, &grants);   /* &r escapes into the helper */
        (*callp)++;
        *sum_ptr += r.first;
        pthread_mutex_unlock(&ticket_lock);

        for (int k = 1; k < r.count; k++)
            local_sum += r.first + k;
    }
    if (calls != ITERS)
        return p;
    *result = local_sum;
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    long sums[NTHREADS] = {0};
    long total = 0;
    int failed = 0;

    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, &sums[i]);
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        pthread_join(threads[i], &ret);
        failed |= ret != NULL;
        total += sums[i];
    }

    printf("tickets=%ld grants=%ld sum=%ld\n", next_ticket, grants, total);
    if (failed || grants != next_ticket ||
        total != next_ticket * (next_ticket - 1) / 2) {
        fprintf(stderr, "locals_pointer_escape: tickets lost\n");
        return 1;
    }
    return 0;
}
