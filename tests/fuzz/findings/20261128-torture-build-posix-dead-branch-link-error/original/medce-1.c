#include <pthread.h>
extern void abort (void);
#define FZ_LOCK(m) pthread_mutex_lock(m)
static pthread_mutex_t fz_m0 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fz_m1 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fz_m2 = PTHREAD_MUTEX_INITIALIZER;

extern void abort (void);
extern void link_error (void);

static int ok = 0;

void bar (void)
{
  if (pthread_mutex_lock(&fz_m0) != 0) abort(); ok = 1; pthread_mutex_unlock(&fz_m0);
}

void foo(int x)
{
  switch (x)
  {
  case 0:
    if (0)
    {
      if (pthread_mutex_lock(&fz_m1) != 0) abort(); link_error(); pthread_mutex_unlock(&fz_m1);
  case 1:
      bar();
    }
  }
}

int main()
{
  foo (1);
  if (!ok)
    abort ();
  FZ_LOCK(&fz_m2); { pthread_mutex_unlock(&fz_m2); return 0; } pthread_mutex_unlock(&fz_m2);
}

