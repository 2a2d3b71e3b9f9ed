/* Lock wrappers that check the pthread result and report where they were called from:
 *   #define take(l) take_(l, __FILE__, __LINE__)
 *   void take_(struct lock *l, const char *file, int line)
 *   { int r = pthread_mutex_lock(&l->m); if (r) lock_failed(r, "lock", file, line); }
 * and the matching release(); sections are written between take() and release(). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4
#define ITERS 3000
#define NACCOUNTS 8

struct lock {
    pthread_mutex_t m;
    const char *name;
};

struct account {
    struct lock lock;
    long balance;
    long operations;
};

static struct account accounts[NACCOUNTS];
static struct lock audit_lock = { PTHREAD_MUTEX_INITIALIZER, "audit" };
static long refused, audited;

static void lock_failed(int err, const char *what, const char *file, int line)
{
    fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, what, strerror(err));
    abort();
}

void take_(struct lock *l, const char *file, int line)
{
    int r = pthread_mutex_lock(&l->m);
    if (r)
        lock_failed(r, "lock", file, line);
}

void release_(struct lock *l, const char *file, int line)
{
    int r;

    r = pthread_mutex_unlock(&l->m);
    if (r != 0)
        lock_failed(r, "unlock", file, line);
}

#define take(l) take_(l, __FILE__, __LINE__)
#define release(l) release_(l, __FILE__, __LINE__)

static void deposit(struct account *a, long amount)
{
    take(&a->lock);
    a->balance += amount;
    a->operations++;
    release(&a->lock);
}

static int withdraw(struct account *a, long amount)
{
    take(&a->lock);
    if (a->balance < amount) {
        release(&a->lock);
        take(&audit_lock);
        refused++;
        release(&audit_lock);
        return 0;
    }
    a->balance -= amount;
    a->operations++;
    release(&a->lock);
    return 1;
}

static void audit(void)
{
    take(&audit_lock);
    audited++;
    release(&audit_lock);
}

static void *run(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        struct account *a = &accounts[(id + i) % NACCOUNTS];
        deposit(a, 3);
        withdraw(a, 2 + (i % 2)); /* never refused: this thread's own deposit is still there */
        if (i % 50 == 0 && !withdraw(a, 1000000)) /* always refused */
            deposit(a, 1);
        if (i % 100 == 0)
            audit();
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    for (int i = 0; i < NACCOUNTS; i++) {
        pthread_mutex_init(&accounts[i].lock.m, NULL);
        accounts[i].lock.name = "account";
    }
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    long balance = 0, operations = 0;
    for (int i = 0; i < NACCOUNTS; i++) {
        balance += accounts[i].balance;
        operations += accounts[i].operations;
        pthread_mutex_destroy(&accounts[i].lock.m);
    }
    printf("balance=%ld operations=%ld refused=%ld audited=%ld\n", balance, operations, refused, audited);
    if (balance != (long)NTHREADS * (ITERS / 2 + ITERS / 50) || refused != (long)NTHREADS * (ITERS / 50)
        || operations != (long)NTHREADS * (ITERS * 2 + ITERS / 50) || audited != (long)NTHREADS * (ITERS / 100)) {
        fprintf(stderr, "wrapper_checked_file_line: lost updates\n");
        return 1;
    }
    return 0;
}
