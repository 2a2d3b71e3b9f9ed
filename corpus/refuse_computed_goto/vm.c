/* A tiny bytecode interpreter whose shared machine state is protected by
 * one lock; the region dispatches with GCC computed goto (&&label). */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 1500

enum { OP_ADD, OP_SUB, OP_MUL2, OP_HALT };

static pthread_mutex_t vm_lock = PTHREAD_MUTEX_INITIALIZER;
static long acc;
static long executed;

static void run_program(const unsigned char *code, long arg)
{
    static void *dispatch[] = { &&do_add, &&do_sub, &&do_mul2, &&do_halt };
    const unsigned char *pc = code;

    pthread_mutex_lock(&vm_lock);
    goto *dispatch[*pc++];
do_add:
    acc += arg;
    executed++;
    goto *dispatch[*pc++];
do_sub:
    acc -= arg;
    executed++;
    goto *dispatch[*pc++];
do_mul2:
    acc = acc * 2 - acc;               /* net effect: none, but touches acc */
    executed++;
    goto *dispatch[*pc++];
do_halt:
    pthread_mutex_unlock(&vm_lock);
}

static void *run(void *p)
{
    int id = *(int *)p;
    static const unsigned char prog_a[] = { OP_ADD, OP_ADD, OP_MUL2, OP_SUB, OP_HALT };
    static const unsigned char prog_b[] = { OP_ADD, OP_HALT };

    for (int i = 0; i < ITERS; i++)
        run_program(i % 2 ? prog_a : prog_b, id + 1);
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);

    /* Both programs add arg once net: acc = ITERS * (1+2+3+4). */
    printf("acc=%ld executed=%ld\n", acc, executed);
    if (acc != ITERS * 10L || executed != NTHREADS * (ITERS / 2) * 5L) {
        fprintf(stderr, "refuse_computed_goto: interpreter state wrong\n");
        return 1;
    }
    return 0;
}
