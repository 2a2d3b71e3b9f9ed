#include <pthread.h>
extern void abort (void);
#define FZ_LOCK(m) pthread_mutex_lock(m)
static pthread_mutex_t fz_m0 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fz_m1 = PTHREAD_MUTEX_INITIALIZER;
/* PR tree-optimization/43560 */

struct S
{
  int a, b;
  char c[10];
};

__attribute__ ((noinline)) void
test (struct S *x)
{
  if (pthread_mutex_lock(&fz_m0) != 0) abort(); while (x->b > 1 && x->c[x->b - 1] == '/')
    {
      x->b--;
      x->c[x->b] = '\0';
    } pthread_mutex_unlock(&fz_m0);
}

const struct S s = { 0, 0, "" };

int
main ()
{
  struct S *p;
  pthread_mutex_lock(&fz_m1); asm ("" : "=r" (p) : "0" (&s)); pthread_mutex_unlock(&fz_m1);
  test (p);
  return 0;
}
