/* A sorted linked list with one mutex per node, traversed hand over hand:
 * the next node is locked before the current one is released. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define PER_THREAD 100

struct node {
    pthread_mutex_t lock;
    int key;
    struct node *next;
};

static struct node head = { PTHREAD_MUTEX_INITIALIZER, -1, NULL };

static struct node *node_new(int key)
{
    struct node *n = malloc(sizeof(*n));
    if (n == NULL)
        abort();
    pthread_mutex_init(&n->lock, NULL);
    n->key = key;
    n->next = NULL;
    return n;
}

/* Inserts key in order; returns 0 if it was already there. */
static int list_insert(int key)
{
    struct node *prev = &head, *cur;

    pthread_mutex_lock(&prev->lock);
    while ((cur = prev->next) != NULL) {
        pthread_mutex_lock(&cur->lock);
        if (cur->key >= key)
            break;
        pthread_mutex_unlock(&prev->lock);
        prev = cur;
    }
    if (cur != NULL && cur->key == key) {
        pthread_mutex_unlock(&cur->lock);
        pthread_mutex_unlock(&prev->lock);
        return 0;
    }
    struct node *n = node_new(key);
    n->next = cur;
    prev->next = n;
    if (cur != NULL)
        pthread_mutex_unlock(&cur->lock);
    pthread_mutex_unlock(&prev->lock);
    return 1;
}

static void *run(void *p)
{
    int id = *(int *)p;
    int *added = p;

    *added = 0;
    for (int i = 0; i < PER_THREAD; i++)
        *added += list_insert((i * NTHREADS + id) % (PER_THREAD * 3));
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int args[NTHREADS];
    int added = 0, len = 0, sorted = 1;
    long sum = 0;

    for (int i = 0; i < NTHREADS; i++) {
        args[i] = i;
        pthread_create(&threads[i], NULL, run, &args[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        added += args[i];
    }
    for (struct node *n = head.next; n != NULL;) {
        struct node *next = n->next;
        if (next != NULL && next->key <= n->key)
            sorted = 0;
        len++;
        sum += n->key;
        pthread_mutex_destroy(&n->lock);
        free(n);
        n = next;
    }

    printf("added=%d length=%d sum=%ld sorted=%d\n", added, len, sum, sorted);
    if (added != len || len != PER_THREAD * 3 || !sorted) {
        fprintf(stderr, "refuse_hand_over_hand: list corrupted\n");
        return 1;
    }
    return 0;
}
