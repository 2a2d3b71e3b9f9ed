#ifndef SHARED_H
#define SHARED_H

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NSLOTS 4

/* One ledger shared by the C core and the C++ app: both sides lock its mutex directly. */
struct ledger {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* signalled when a C worker finishes */
    long total;
    long deposits[NSLOTS];
    int c_done; /* C workers finished */
};

extern struct ledger ledger;

void ledger_init(void);
void ledger_destroy(void);
void ledger_deposit(int slot, long amount); /* core.c */
long ledger_slot(int slot);                 /* core.c */

/* app.cpp: runs nthreads C++ depositors and one C++ waiter for c_workers C workers; returns the
 * sum the C++ depositors added, as counted on the C++ side. */
long app_run(int nthreads, int rounds, int c_workers);

#ifdef __cplusplus
}
#endif

#endif
