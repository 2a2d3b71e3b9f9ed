/* errno read after the unlock: the section's call sets it (open on a missing file), the caller
 * tests it once the lock is released.  Under RCL the section may run on a server thread; the
 * errno it leaves must come back to the caller. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 50

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static long probes, missing;

static void *prober(void *arg)
{
    const char *path = arg;
    for (int r = 0; r < ROUNDS; r++) {
        int fd;
        errno = 0;
        pthread_mutex_lock(&probe_lock);
        fd = open(path, O_RDONLY);
        probes++;
        pthread_mutex_unlock(&probe_lock);
        if (fd < 0 && errno == ENOENT) {
            pthread_mutex_lock(&probe_lock);
            missing++;
            pthread_mutex_unlock(&probe_lock);
        } else if (fd >= 0) {
            close(fd);
        }
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, prober, "/nonexistent/rclify-probe");
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("probes %ld, ENOENT seen after the unlock %ld\n", probes, missing);
    return missing == probes ? 0 : 1;
}
