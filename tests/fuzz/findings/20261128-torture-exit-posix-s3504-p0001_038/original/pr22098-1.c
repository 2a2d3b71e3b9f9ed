#include <pthread.h>
extern void abort (void);
#define FZ_LOCK(m) pthread_mutex_lock(m)
static pthread_mutex_t fz_m0 = PTHREAD_MUTEX_INITIALIZER;
extern void abort (void);
extern void exit (int);
typedef __UINTPTR_TYPE__ uintptr_t;
int
main (void)
{
  int a = 0;
  int *p;
  uintptr_t b;
  pthread_mutex_lock(&fz_m0); b = (uintptr_t)(p = &(int []){0, 1, 2}[++a]); pthread_mutex_unlock(&fz_m0);
  if (a != 1 || *p != 1 || *(int *)b != 1)
    abort ();
  exit (0);
}
