#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
 struct s0_shared {
  pthread_mutex_t m;
  long sum;
  unsigned long x;
  long maxv;
  long cnt;
  long cnt2;
  long accs;
  };
   __attribute__((unused)) static _Thread_local long s0_tls;
   struct s0_arg {
  struct s0_shared *sh;
  int tid;
  };
   static void *s0_worker(void *p) {
      struct s0_arg *a = p;
      struct s0_shared *sh = a->sh;
      int tid = a->tid;
      long acc = 0;
  char *ap = 0;
      for (int i = 0;
  i < 97;
  i++) {
         long v = (long)((i * 61 + tid * 40) % 1000);
         pthread_mutex_lock(&sh->m);
         sh->cnt++;
         ap = alloca(32);
 snprintf(ap, 32, "%ld", v * 7);
         pthread_mutex_unlock(&sh->m);
         acc += (long)strlen(ap);
     }
      pthread_mutex_lock(&sh->m);
      sh->accs += acc;
      pthread_mutex_unlock(&sh->m);
      return NULL;
  }
   static unsigned long s0(void) {
      struct s0_shared *shp = calloc(1, sizeof *shp);
      pthread_t th[4];
      struct s0_arg args[4];
      for (int t = 0;
  t < 4;
  t++) {
         args[t].sh = shp;
         args[t].tid = t;
         if (pthread_create(&th[t], NULL, s0_worker, &args[t]) != 0) abort();
     }
      for (int t = 0;
  t < 4;
  t++)         pthread_join(th[t], NULL);
      unsigned long r = (unsigned long)shp->sum * 31u + shp->x + (unsigned long)shp->maxv * 7u                       + (unsigned long)shp->cnt * 13u + (unsigned long)shp->cnt2 * 17u + (unsigned long)shp->accs;
      free(shp);
      return r;
  }
   int main(void) {
      printf("s0 threads = %lu\n", s0());
  }
