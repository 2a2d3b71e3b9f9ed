#include <pthread.h>
#define FZ_LOCK(m) pthread_mutex_lock(m)
static pthread_mutex_t fz_m0 = PTHREAD_MUTEX_INITIALIZER;
        struct S {
       int *__restrict p;
       };
        __attribute__(()) struct S *bar (struct S *p) {
         FZ_LOCK(&fz_m0);
       struct S *r;
         asm volatile ("" : "=r" (r) : "0" (p) : "memory");
         
      pthread_mutex_unlock(&fz_m0);
      return r;
      
       }
        
__attribute__(()) int foo (int *p) {
         struct S s, *t;
         s.p = p;
         t = bar (&s);
         t->p[0] = 1;
         return s.p[0];
       }
        int main () {
       int a;
         foo (&a) != 1;
         
          ;
       }
