#include <pthread.h>
extern void abort (void);
static pthread_mutex_t fz_m0 = PTHREAD_MUTEX_INITIALIZER;
int
main (void)
{
  int a = 0;
  int *p;
  pthread_mutex_lock(&fz_m0); p = &(int []){0, 1, 2}[++a]; pthread_mutex_unlock(&fz_m0);
  if (a != 1 || *p != 1)
    abort ();
  return 0;
}
