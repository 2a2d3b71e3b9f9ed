/* __func__ reached through macros inside sections: a TRACE macro recording the function's
   name, __FUNCTION__ in another, and glibc's assert (whose message names the function). */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t account_lock = PTHREAD_MUTEX_INITIALIZER;
static long balance = 1;
static char last_op[32];
static int deposits, withdrawals;

#define TRACE() snprintf(last_op, sizeof last_op, "%s", __func__)
#define TRACE_OLD() strcpy(last_op, __FUNCTION__)

static void deposit(long v)
{
    pthread_mutex_lock(&account_lock);
    balance += v;
    deposits++;
    TRACE();
    assert(balance > 0);
    pthread_mutex_unlock(&account_lock);
}

static void withdraw(long v)
{
    pthread_mutex_lock(&account_lock);
    if (balance > v) {
        balance -= v;
        withdrawals++;
    }
    TRACE_OLD();
    pthread_mutex_unlock(&account_lock);
}

static void *worker(void *arg)
{
    for (int i = 0; i < 1000; i++) {
        deposit((long)arg);
        withdraw(1);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[2];
    for (long t = 0; t < 2; t++)
        pthread_create(&threads[t], NULL, worker, (void *)(t + 2));
    for (int t = 0; t < 2; t++)
        pthread_join(threads[t], NULL);
    deposit(5);
    printf("balance=%ld deposits=%d withdrawals=%d last=%s\n", balance, deposits, withdrawals, last_op);
    withdraw(1);
    printf("last=%s\n", last_op);
    return strcmp(last_op, "withdraw") != 0;
}
