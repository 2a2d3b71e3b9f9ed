#include <pthread.h>
extern void abort (void);
#define FZ_LOCK(m) pthread_mutex_lock(m)
static pthread_mutex_t fz_m0 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fz_m1 = PTHREAD_MUTEX_INITIALIZER;
extern void abort (void);
int __attribute__((noinline,noclone))
foo (char *p)
{
  int h = 0;
  if (pthread_mutex_lock(&fz_m0) != 0) abort(); do
    {
      if (*p == '\0')
	break;
      ++h;
      if (p == 0)
	abort ();
      if (pthread_mutex_lock(&fz_m1) != 0) abort(); ++p; pthread_mutex_unlock(&fz_m1);
    }
  while (1); pthread_mutex_unlock(&fz_m0);
  return h;
}
int main()
{
  if (foo("a") != 1)
    abort ();
  return 0;
}
