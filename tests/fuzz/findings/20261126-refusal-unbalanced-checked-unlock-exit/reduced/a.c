#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long x = 10;
static int take(long amt)
{
    if (pthread_mutex_lock(&m) != 0) abort();
    if (amt < 0) {
        if (pthread_mutex_unlock(&m) != 0) abort();
        return -2;
    }
    x -= amt;
    if (pthread_mutex_unlock(&m) != 0) abort();
    return 0;
}
int main(void)
{
    printf("%d %d %ld\n", take(3), take(-1), x);
    return 0;
}
