/* Wrappers over the program's own lock wrappers, defined in a file read before theirs:
 * hold()/release() (libuv's os390 before_fork()/after_fork() over uv_mutex_lock()) and
 * take(a)/give(a) over lock_it()/unlock_it() of locks.c. */
#include <pthread.h>
#include <stdio.h>

struct account {
    pthread_mutex_t m;
    long balance;
};

void lock_it(pthread_mutex_t *m);
void unlock_it(pthread_mutex_t *m);

static pthread_mutex_t global_lock;
static long operations;
static struct account accounts[2];

static void hold(void) { lock_it(&global_lock); }
static void release(void) { unlock_it(&global_lock); }
static void take(struct account *a) { lock_it(&a->m); }
static void give(struct account *a) { unlock_it(&a->m); }

static void count(void)
{
    hold();
    operations++;
    release();
}

static int deposit(struct account *a, long amount)
{
    take(a);
    if (a->balance + amount < 0) {
        give(a);
        return -1;
    }
    a->balance += amount;
    give(a);
    count();
    return 0;
}

static void *work(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < 20000; i++)
        deposit(&accounts[(i + id) % 2], (i % 3 == 2) ? -1 : 1);
    return NULL;
}

int main(void)
{
    pthread_t threads[4];
    pthread_mutex_init(&global_lock, NULL);
    for (int i = 0; i < 2; i++)
        pthread_mutex_init(&accounts[i].m, NULL);
    for (long t = 0; t < 4; t++)
        pthread_create(&threads[t], NULL, work, (void *)t);
    for (int t = 0; t < 4; t++)
        pthread_join(threads[t], NULL);
    long refused = 80000 - operations;
    printf("operations=%ld refused=%ld total=%ld\n", operations, refused, accounts[0].balance + accounts[1].balance);
    if (operations + refused != 80000 || accounts[0].balance < 0 || accounts[1].balance < 0) {
        fprintf(stderr, "inconsistent\n");
        return 1;
    }
    return 0;
}
