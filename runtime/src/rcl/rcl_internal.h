/*
 * Remote Core Locking: structures shared by the client side (rcl.c), the server side
 * (rcl_server.c) and the client identifiers (rcl_clients.c).  Paper: Lozi et al., TOCS 2016, section 3, Algorithms 2-5.
 */
#ifndef RCLIFY_RCL_INTERNAL_H
#define RCLIFY_RCL_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "core/atomics.h"
#include "core/runtime.h"

#define RCL_NONE 0      /* lock holder value: free */
#define RCL_CLAIMING -1 /* holder value while a servicing thread re-validates a claim: never a client id,
                        * so a stale claim cannot look like "held by me" to the request's client */

/* rcl_clients.c: client identifiers, 1 .. RCL_MAX_CLIENTS-1 (0 is "no holder"). */
#define RCL_MAX_CLIENTS 4096
extern __thread int rcl_tls_client_id;
int rcl_client_id_alloc(void);
static inline int rcl_client_id(void)
{
    int id = rcl_tls_client_id;
    return __builtin_expect(id != 0, 1) ? id : rcl_client_id_alloc();
}
int rcl_clients_max(void);  /* highest live identifier (relaxed) */
int rcl_clients_live(void); /* number of live identifiers (relaxed) */

/* Special values of a mailbox's function word. */
int rcl_fn_hybrid_lock(void *ctx);  /* request: take the lock for real_me and keep it */
int rcl_fn_in_progress(void *ctx);  /* its section waits on a condvar, lock released: not claimable */
int rcl_fn_withdrawn(void *ctx);    /* a timed hybrid lock gave up: not claimable (rcl.c, withdraw) */
#define RCL_FN_HYBRID_LOCK (&rcl_fn_hybrid_lock)
#define RCL_FN_IN_PROGRESS (&rcl_fn_in_progress)
#define RCL_FN_WITHDRAWN (&rcl_fn_withdrawn)

/* One client's mailbox on one server: one cache line. */
#define RCL_INLINE_CTX 32
struct rcl_request {
    rcl_cs_fn function;   /* NULL: empty; set last by the client (release), reset by the server */
    struct rcl_lock *lock;
    int ret;              /* fn's return value */
    int err;              /* errno: the client's when it posts, the section's when it completes */
    int16_t real_me;      /* client the section originates from (holder value) */
    uint8_t ctx_size;     /* non-zero: the context is copied in ctx.bytes */
    uint8_t sleeping;     /* the client sleeps on `function` (futex): wake it on completion */
    union {
        char bytes[RCL_INLINE_CTX]; /* ctx_size != 0: the context itself, copied in and back */
        void *ptr;                  /* ctx_size == 0: its address */
    } ctx __attribute__((aligned(8)));
} RCL_ALIGNED;
_Static_assert(sizeof(struct rcl_request) == RCL_CACHE_LINE, "a mailbox is one cache line");
_Static_assert(RCL_INLINE_CTX < 256, "ctx_size is a byte");

/* rcl_clients.c: &errno of this thread, set with its client identifier (initial-exec TLS: one
 * load, where errno itself is a call to __errno_location). */
extern __thread int *rcl_tls_errno;

/* Completes a request: publishes ret (and the inline context), then wakes its client if it went
 * to sleep.  The load of `sleeping` is not ordered after the store (no fence on the server's fast
 * path): a client that sets it just then misses this wake-up and sleeps out its short timeout. */
static inline void rcl_request_complete(struct rcl_request *r)
{
    st_release(&r->function, NULL);
    if (ld_relaxed(&r->sleeping))
        rcl_futex_wake((int *)(void *)&r->function, 1);
}

/* Per-lock state (m->impl).  Two cache lines: clients read only the first one on their fast path,
 * so the holder's line stays in the server's cache while it runs sections back to back. */
struct rcl_lock {
    /* read-mostly */
    struct rcl_server *server;
    rcl_mutex_t *mutex;
    struct rcl_lock *next_free;
    char *id;             /* copy of the lock id, for statistics after the mutex is gone */
    /* written by the holder */
    int holder RCL_ALIGNED; /* client id of the holder (real_me), RCL_NONE when free */
    int depth;            /* extra recursive acquisitions, owned by the holder */
    int waiter;           /* mailbox (client id) of a request that found the lock held and is served
                           * next: the grant order (rcl_lock_waiter_pending); 0 when none */
    /* statistics, written by the holder (relaxed) */
    unsigned long sections_remote, sections_local, hybrid_locks;
} RCL_ALIGNED;

/* Statistics of a server: the pass counters are kept per servicing thread (single writer, no
 * atomic read-modify-write on the servicing loop), the pool counters per server (atomic adds);
 * rcl_servers_print_stats sums them. */
struct rcl_server_stats {
    unsigned long sections, hybrid, passes, active_passes, active_clients, active_locks;
    unsigned long slow_passes, mgr_wakeups, no_progress, threads_created, threads_woken, parks;
};

/* One servicing thread. */
struct rcl_sthread {
    struct rcl_server *server;
    pthread_t tid;
    unsigned timestamp;       /* server timestamp when it last started a pass */
    int is_servicing;         /* futex word: 0 while parked in the prepared stack */
    int in_section;           /* running a section: not free to serve other requests */
    struct rcl_sthread *next_all, *next_prepared;
    struct rcl_server_stats stats; /* written by this thread only */
} RCL_ALIGNED;

struct rcl_server {
    /* read-mostly */
    int index, cpu, fifo;
    struct rcl_request *requests; /* RCL_MAX_CLIENTS mailboxes */
    int started;                  /* 0, then 1 once threads run (release) */
    int cpu_now;                  /* CPU a servicing thread last ran on (hint, -1: not known) */
    char pad0[RCL_CACHE_LINE] __attribute__((aligned(RCL_CACHE_LINE)));
    /* idle parking: 1 while (some) servicing threads sleep on it; clients wake them */
    int parked RCL_ALIGNED;
    char pad1[RCL_CACHE_LINE - sizeof(int)];
    /* pool state (Algorithm 4/5) */
    int nb_servicing RCL_ALIGNED, is_alive; /* free threads: see pool_free_threads */
    unsigned timestamp;
    int mgr_word;                 /* futex: the backup thread wakes the manager */
    pthread_mutex_t pool_lock;    /* all_threads list, prepared stack, thread creation */
    struct rcl_sthread *all_threads, *prepared; /* all_threads: push-only (release), never freed */
    struct rcl_server_stats stats RCL_ALIGNED;
};

struct rcl_server *rcl_server_get(int index, int cpu); /* starts it on first use */

/*
 * The grant order of a lock (fairness between local and remote execution, docs/runtime.md): a
 * request that a servicing thread finds waiting for a held lock becomes the lock's `waiter` when
 * it has none, and while it is still posted for the lock nobody else takes the lock: not another
 * request (claim, rcl_server.c), not a trylock or a free-lock timed lock of a client (rcl.c).  Its
 * mailbox is looked at only when a waiter is set: the fast path pays one load, on the holder's line.
 * Returns the pending waiter's mailbox index, or 0 (a waiter served, withdrawn or gone is cleared).
 * s is l's server, passed by the caller: a servicing thread may look at a request's lock state
 * after the request completed and the lock was destroyed (its state reused), and reads only the
 * atomic words of it before re-validating the request (rcl_server.c, claim).
 */
static inline int rcl_lock_waiter_pending(struct rcl_lock *l, struct rcl_server *s)
{
    int w = ld_relaxed(&l->waiter);
    if (!w)
        return 0;
    struct rcl_request *r = &s->requests[w];
    rcl_cs_fn fn = ld_relaxed(&r->function);
    if (fn && fn != RCL_FN_IN_PROGRESS && fn != RCL_FN_WITHDRAWN && ld_relaxed(&r->lock) == l)
        return w;
    __atomic_compare_exchange_n(&l->waiter, &w, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED); /* stale */
    return 0;
}

/* Thread-local identity of servicing threads (NULL / 0 on client threads). */
extern __thread struct rcl_sthread *rcl_tls_sthread;
extern __thread int rcl_tls_real_me; /* real_me of the section a servicing thread runs */
extern __thread struct rcl_request *rcl_tls_request; /* the request whose section it runs */

/* Called by a client after publishing a request: wakes parked servicing threads (Dekker). */
static inline void rcl_server_kick(struct rcl_server *s)
{
    fence_seq_cst(); /* the request store before the load of parked; pairs with the server's */
    if (ld_relaxed(&s->parked) && xchg_acq_rel(&s->parked, 0))
        rcl_futex_wake(&s->parked, INT_MAX);
}

/* Waiting for another thread, n-th time: sched_yield, or on a SCHED_FIFO servicing thread after a
 * few tries a short sleep (yield would not let a normal-priority thread run). */
void rcl_server_backoff(unsigned n);

/* Makes sure a free servicing thread exists on s (the caller's section is about to block). */
void rcl_server_ensure_free(struct rcl_server *s);

/* The hooks of rcl_ops_rcl that the core calls whatever a lock's algorithm (core/lock_ops.h). */
/* prepare_block: on a servicing thread, makes sure another servicing thread is free to serve the
 * other locks of its server.  No-op elsewhere. */
void rcl_server_prepare_block(void);
/* print_process_stats: the servers' table (rcl_server.c), then the locks' (rcl.c). */
void rcl_servers_print_stats(int fd);
void rcl_locks_print_stats(int fd);

#endif
