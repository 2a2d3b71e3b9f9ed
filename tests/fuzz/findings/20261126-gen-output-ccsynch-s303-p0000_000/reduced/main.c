#include <pthread.h>
#include <stdio.h>
#include <string.h>
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
         static long stat_n;
         long total = 0, tv = 5, *tp = &tv;
         long found = 0, hits = 0, *hp = &found;
         const char *name = "";
         for (long i = 0;
     i < 32;
     i++) {
            pthread_mutex_lock(&s0_m);
            char nb[20];
    snprintf(nb, sizeof nb, "n%ld", i);
    name = nb;
            pthread_mutex_unlock(&s0_m);
            total += (long)strlen(name) * name[1];
        }
         return (unsigned long)total + (unsigned long)cp.x * 3u + (unsigned long)cp.y + (unsigned long)tv            + (unsigned long)hits * 1009u + (unsigned long)arr[2] + (unsigned long)stat_n;
     }
      int main(void) {
         printf("s0 locals = %lu\n", s0());
     }
