#ifndef SYNCH_H
#define SYNCH_H
typedef void *mr_lock_t;
typedef struct {
    mr_lock_t (*alloc)(void);
    void (*acquire)(mr_lock_t);
    void (*release)(mr_lock_t);
    void (*free)(mr_lock_t);
} mr_lock_ops;
mr_lock_t lock_alloc(void);
void lock_acquire(mr_lock_t l);
void lock_release(mr_lock_t l);
void lock_free(mr_lock_t l);
#endif
