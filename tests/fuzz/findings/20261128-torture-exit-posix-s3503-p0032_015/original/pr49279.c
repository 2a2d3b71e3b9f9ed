#include <pthread.h>
extern void abort (void);
#define FZ_LOCK(m) pthread_mutex_lock(m)
static pthread_mutex_t fz_m0 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fz_m1 = PTHREAD_MUTEX_INITIALIZER;
/* PR tree-optimization/49279 */
extern void abort (void);

struct S { int a; int *__restrict p; };

__attribute__((noinline, noclone))
struct S *bar (struct S *p)
{
  FZ_LOCK(&fz_m0); struct S *r;
  asm volatile ("" : "=r" (r) : "0" (p) : "memory");
  { pthread_mutex_unlock(&fz_m0); return r; } pthread_mutex_unlock(&fz_m0);
}

__attribute__((noinline, noclone))
int
foo (int *p, int *q)
{
  struct S s, *t;
  s.a = 1;
  s.p = p;
  t = bar (&s);
  t->p = q;
  s.p[0] = 0;
  t->p[0] = 1;
  return s.p[0];
}

int
main ()
{
  if (pthread_mutex_lock(&fz_m1) != 0) abort(); int a, b;
  if (foo (&a, &b) != 1)
    abort ();
  { pthread_mutex_unlock(&fz_m1); return 0; } pthread_mutex_unlock(&fz_m1);
}
