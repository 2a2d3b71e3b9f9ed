/*
 * fc: Flat Combining (Hendler, Incze, Shavit & Tzafrir, SPAA 2010), simplified for per-lock
 * memory that does not grow with the threads.
 *
 * A lock word (the combiner role) and a publication list.  A thread that finds the word free
 * takes it and runs its section itself; otherwise it publishes its request and waits on the
 * request's own flag.  The holder, when it leaves, detaches the whole publication list, serves
 * the requests in the order they came (granting each waiter), detaches again while more came,
 * and frees the word once the list is empty; after RCL_COMBINE_BOUND requests, or at a request
 * for the lock itself (hybrid form), it hands the word to that request's owner instead, keeping
 * the rest of the detached requests for it (`backlog`).
 *
 * What is simplified: in the paper each thread owns a publication record that stays in the list
 * while the thread is active (aged out by the combiner), and the combiner scans the records.
 * Here a record is the request itself, on the poster's stack, pushed for one section and taken
 * out by the combiner that serves it: the list holds only pending requests, a lock holds three
 * words (192 bytes with the generic head), and no record outlives its thread.  The price is one CAS per published request, which
 * the paper's persistent records avoid.
 *
 * Waiters never watch the word (so that they may sleep under the waiting policy): instead a
 * poster, after publishing, looks at the word once more, and a holder, after freeing it, looks
 * at the list once more (both with sequentially consistent accesses, the Dekker pattern): one of
 * them sees the other, so a request is never left in the list of a free lock.
 */
#include "combining/combining.h"

struct fc {
    int word;                                 /* 0 free, 1 held */
    struct rcl_comb_req *published;           /* pending requests, newest first */
    struct rcl_comb_req *backlog RCL_ALIGNED; /* the holder's: detached, not served, oldest first */
};

static int fc_try(void *state)
{
    struct fc *l = state;
    int expected = 0;
    return ld_relaxed(&l->word) == 0 && cas_acquire(&l->word, &expected, 1);
}

static int fc_is_held(void *state)
{
    struct fc *l = state;
    return ld_acquire(&l->word) != 0 || ld_acquire(&l->published) != NULL;
}

/* Takes every published request, oldest first (acquire: their contents are visible). */
static struct rcl_comb_req *detach(struct fc *l)
{
    struct rcl_comb_req *newest = xchg_acq_rel(&l->published, NULL), *oldest = NULL;
    while (newest) {
        struct rcl_comb_req *n = newest->next;
        newest->next = oldest;
        oldest = newest;
        newest = n;
    }
    return oldest;
}

static int fc_post(void *state, struct rcl_comb_req *req, int policy)
{
    struct fc *l = state;
    if (fc_try(l))
        return 0;
    req->next = ld_relaxed(&l->published);
    while (!__atomic_compare_exchange_n(&l->published, &req->next, req, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED))
        ;
    /* The holder may have freed the word before it could see the request: if it is free now,
     * take it (Dekker with fc_release: the push above and this load are both seq_cst). */
    if (__atomic_load_n(&l->word, __ATOMIC_SEQ_CST) == 0 && fc_try(l)) {
        /* Every request not granted is still published once the word is free (a holder frees
         * it only with its backlog served).  Ours may have been served just before: done. */
        if (ld_acquire(&req->flag) == RCL_FLAG_GRANTED)
            return 0;
        struct rcl_comb_req *list = detach(l), **p = &list;
        while (*p != req)
            p = &(*p)->next;
        *p = req->next;
        l->backlog = list;
        return 0;
    }
    rcl_comb_wait(&req->flag, policy);
    return req->done; /* 0: handed the word (and the backlog) by the last holder */
}

static int fc_release(struct rcl_comb *c, void *state, int policy)
{
    struct fc *l = state;
    struct rcl_comb_pass pass;
    rcl_comb_pass_begin(&pass, c);
    struct rcl_comb_req *list = l->backlog;
    for (;;) {
        if (list == NULL)
            list = detach(l);
        if (list == NULL) {
            l->backlog = NULL;
            rcl_comb_pass_end(&pass);
            __atomic_store_n(&l->word, 0, __ATOMIC_SEQ_CST); /* also releases the sections run */
            if (__atomic_load_n(&l->published, __ATOMIC_SEQ_CST) == NULL || !fc_try(l))
                return 1; /* nobody waits, or the thread that took the word serves them */
            unsigned served = pass.served;
            rcl_comb_pass_begin(&pass, c);
            pass.served = served;
            rcl_comb_taken(c);
            continue;
        }
        struct rcl_comb_req *r = list;
        if (r->fn == NULL || rcl_comb_pass_full(&pass)) {
            l->backlog = r->next;
            rcl_comb_pass_end(&pass);
            rcl_flag_grant(&r->flag); /* r's owner holds the word now (r->done is 0) */
            return 0;
        }
        list = r->next; /* read before the grant: the request's memory is its owner's again */
        rcl_comb_run(&pass, r);
        rcl_flag_grant(&r->flag);
    }
}

static const struct rcl_comb_ops fc_ops = {
    .size = sizeof(struct fc),
    .is_held = fc_is_held,
    .post = fc_post,
    .try_acquire = fc_try,
    .release = fc_release,
};

RCL_DEFINE_COMBINING_ALGORITHM(fc, fc_ops);
