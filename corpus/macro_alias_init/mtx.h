/* A portability header of object-like aliases for the whole pthread API a queue uses, the init
   included: rcl_mutex_init takes a third argument, so that alias is rewritten as a function-like
   macro and each of its calls is a lock of its own. */
#ifndef MTX_H
#define MTX_H
#include <pthread.h>
#define my_mutex_t pthread_mutex_t
#define my_cond_t pthread_cond_t
#define my_mutex_init pthread_mutex_init
#define my_mutex_destroy pthread_mutex_destroy
#define my_mutex_lock pthread_mutex_lock
#define my_mutex_unlock pthread_mutex_unlock
#define my_cond_init pthread_cond_init
#define my_cond_wait pthread_cond_wait
#define my_cond_signal pthread_cond_signal
#define my_cond_destroy pthread_cond_destroy
struct queue { my_mutex_t mutex; my_cond_t nonempty; int items[128]; int head, tail, total; };
void queue_init(struct queue *q);
void queue_put(struct queue *q, int v);
int queue_get(struct queue *q);
#endif
