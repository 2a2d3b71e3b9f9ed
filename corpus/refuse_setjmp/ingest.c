/* Records are parsed inside the region; the parser reports a bad record
 * with longjmp back to a setjmp taken inside the same region. */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 1000

static pthread_mutex_t db_lock = PTHREAD_MUTEX_INITIALIZER;
static long db_total;
static int good_records, bad_records;

static long parse_number(const char *s, jmp_buf on_error)
{
    long v = 0;

    if (*s == '\0')
        longjmp(on_error, 1);
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            longjmp(on_error, 2);
        v = v * 10 + (*s - '0');
    }
    return v;
}

static void ingest(const char *record)
{
    jmp_buf env;

    pthread_mutex_lock(&db_lock);
    if (setjmp(env) != 0) {
        bad_records++;
        pthread_mutex_unlock(&db_lock);
        return;
    }
    db_total += parse_number(record, env);
    good_records++;
    pthread_mutex_unlock(&db_lock);
}

static void *run(void *p)
{
    int id = *(int *)p;
    char rec[32];

    for (int i = 0; i < ITERS; i++) {
        if (i % 10 == 3)
            snprintf(rec, sizeof(rec), "x%d", i);      /* malformed */
        else
            snprintf(rec, sizeof(rec), "%d", i + id);
        ingest(rec);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    long expected = 0;

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < ITERS; i++)
            if (i % 10 != 3)
                expected += i + t;

    printf("good=%d bad=%d total=%ld\n", good_records, bad_records, db_total);
    if (db_total != expected || bad_records != NTHREADS * ITERS / 10 ||
        good_records + bad_records != NTHREADS * ITERS) {
        fprintf(stderr, "refuse_setjmp: ingest totals wrong\n");
        return 1;
    }
    return 0;
}
