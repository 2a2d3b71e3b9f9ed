#include <pthread.h>
#include <stdio.h>
#define LOCK(m) pthread_mutex_lock(m)
#define UNLOCK(m) pthread_mutex_unlock(m)
  __attribute__((unused)) static long fz_static_helper(long a, long b) {
   return a * 3 + (b ^ 5);
   }
    static pthread_mutex_t s0_m = PTHREAD_MUTEX_INITIALIZER;
    struct s0_pt {
   long x;
   int y;
   };
    static unsigned long s0(void) {
       struct s0_pt pt = {
  1, 2 }
  , cp = {
  0, 0 };
       long arr[8] = {
  0 };
       volatile long vol = 1;
       static long stat_n;
       long total = 0, tv = 5, *tp = &tv;
       long found = 0, hits = 0, *hp = &found;
       for (long i = 0;
   i < 10;
   i++) {
          LOCK(&s0_m);
          *hp = (i % 3 == 0);
  if (found) hits++;
          UNLOCK(&s0_m);
      }
       return (unsigned long)total + (unsigned long)cp.x * 3u + (unsigned long)cp.y + (unsigned long)tv            + (unsigned long)hits * 1009u + (unsigned long)arr[2] + (unsigned long)stat_n;
   }
    int main(void) {
       printf("s0 locals = %lu\n", s0());
   }
