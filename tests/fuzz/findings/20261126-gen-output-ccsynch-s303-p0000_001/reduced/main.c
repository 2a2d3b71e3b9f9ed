#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
    __attribute__((unused)) static long fz_var_helper(int n, ...) {
      long s = 0;
      return s;
  }
   struct s0_shared {
  pthread_mutex_t m;
  long sum;
  unsigned long x;
  long maxv;
  long cnt;
  long cnt2;
  long accs;
  };
   static struct s0_shared s0_g = {
  PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0 };
   struct s0_arg {
  struct s0_shared *sh;
  int tid;
  };
   static void *s0_worker(void *p) {
      struct s0_arg *a = p;
      struct s0_shared *sh = a->sh;
      int tid = a->tid;
      long acc = 0;
  const char *bp = 0;
      for (int i = 0;
  i < 279;
  i++) {
         long v = (long)((i * 32 + tid * 27) % 1000);
         if (pthread_mutex_lock(&sh->m) != 0) abort();
         sh->sum += fz_var_helper(2, (long)(v), (long)(tid));
         char buf[24];
 snprintf(buf, sizeof buf, "v%ld", v);
 bp = buf;
         if (pthread_mutex_unlock(&sh->m) != 0) abort();
         acc += (long)strlen(bp) + bp[1];
     }
      if (pthread_mutex_lock(&sh->m) != 0) abort();
      sh->accs += acc;
      if (pthread_mutex_unlock(&sh->m) != 0) abort();
      return NULL;
  }
   static unsigned long s0(void) {
      struct s0_shared *shp = &s0_g;
      pthread_t th[2];
      struct s0_arg args[2];
      for (int t = 0;
  t < 2;
  t++) {
         args[t].sh = shp;
         args[t].tid = t;
         if (pthread_create(&th[t], NULL, s0_worker, &args[t]) != 0) abort();
     }
      for (int t = 0;
  t < 2;
  t++)         pthread_join(th[t], NULL);
      unsigned long r = (unsigned long)shp->sum * 31u + shp->x + (unsigned long)shp->maxv * 7u                       + (unsigned long)shp->cnt * 13u + (unsigned long)shp->cnt2 * 17u + (unsigned long)shp->accs;
      return r;
  }
   int main(void) {
      printf("s0 threads = %lu\n", s0());
  }
