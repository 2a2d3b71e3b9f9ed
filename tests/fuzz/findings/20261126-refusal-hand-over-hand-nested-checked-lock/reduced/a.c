#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static pthread_mutex_t b = PTHREAD_MUTEX_INITIALIZER, c = PTHREAD_MUTEX_INITIALIZER;
static int x;
int main(void)
{
    pthread_mutex_lock(&b);
    for (int k = 0; k < 5; k++) {
        if (pthread_mutex_lock(&c) != 0) abort();
        x += k;
        pthread_mutex_unlock(&c);
    }
    pthread_mutex_unlock(&b);
    printf("%d\n", x);
    return 0;
}
