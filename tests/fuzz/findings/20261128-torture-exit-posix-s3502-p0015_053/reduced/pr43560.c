#include <pthread.h>
   static pthread_mutex_t fz_m1 = PTHREAD_MUTEX_INITIALIZER;
       struct S {
        int a, b;
        char c[10];
      };
       __attribute__ ((noinline)) void test (struct S *x) {
      while (x->b > 1 && x->c[x->b - 1] == '/')     {
         }
      }
       const struct S s = {
      0, 0, "" };
       int main () {
        struct S *p;
        pthread_mutex_lock(&fz_m1);
      asm ("" : "=r" (p) : "0" (&s));
      pthread_mutex_unlock(&fz_m1);
        test (p);
      }
