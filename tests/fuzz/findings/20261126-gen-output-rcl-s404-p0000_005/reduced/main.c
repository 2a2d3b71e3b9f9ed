#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define CHECKED_LOCK(m) do { if (pthread_mutex_lock(m) != 0) abort(); } while (0)
#define CHECKED_UNLOCK(m) do { if (pthread_mutex_unlock(m) != 0) abort(); } while (0)
  __attribute__((unused)) static long fz_static_helper(long a, long b) {
 return a * 3 + (b ^ 5);
 }
    __attribute__((unused)) static void fz_add_to(long *p, long v) {
 *p += v;
 }
  static pthread_mutex_t s0_m = PTHREAD_MUTEX_INITIALIZER;
  struct s0_pt {
 long x;
 int y;
 };
  static unsigned long s0(void) {
     struct s0_pt pt = { 1, 2 }
, cp = { 0, 0 };
     long arr[8] = { 0 };
     volatile long vol = 1;
     static long stat_n;
     const long cst = 6;
     long total = 0, tv = 5, *tp = &tv;
     long found = 0, hits = 0, *hp = &found;
     const char *name = "";
     (void)pt;
 (void)cp;
 (void)tp;
 (void)arr;
     for (long i = 0;
 i < 30;
 i++) {         CHECKED_LOCK(&s0_m);         total += cst * i;         fz_add_to(&total, i + 1);         arr[i % 8] += i * 3; total += arr[(i + 3) % 8];         char nb[20]; snprintf(nb, sizeof nb, "n%ld", i); name = nb;         CHECKED_UNLOCK(&s0_m);         total += (long)strlen(name) * name[1];     }
     return (unsigned long)total + (unsigned long)cp.x * 3u + (unsigned long)cp.y + (unsigned long)tv            + (unsigned long)hits * 1009u + (unsigned long)arr[2] + (unsigned long)stat_n;
 }
  int main(void) {
     printf("s0 locals = %lu\n", s0());
     return 0;
 }
