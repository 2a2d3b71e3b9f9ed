// The C++ half: depositors that lock the shared ledger's mutex themselves, through a scoped
// guard and directly, and a waiter on the ledger's condition variable.
#include <pthread.h>
#include <cstdio>
#include <thread>
#include <vector>

#include "shared.h"

namespace {

pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;
long tally; // what the C++ depositors added, counted on this side

class LedgerGuard {
public:
    explicit LedgerGuard(pthread_mutex_t *m) : m_(m) { pthread_mutex_lock(m_); }
    ~LedgerGuard() { pthread_mutex_unlock(m_); }
    LedgerGuard(const LedgerGuard &) = delete;
    LedgerGuard &operator=(const LedgerGuard &) = delete;

private:
    pthread_mutex_t *m_;
};

struct Depositor {
    int id;
    int rounds;

    void run() const
    {
        long mine = 0;
        for (int i = 0; i < rounds; i++) {
            long amount = (i * 3 + id) % 11 + 1;
            if (i % 2 == 0) {
                LedgerGuard guard(&ledger.lock);
                ledger.total += amount;
                ledger.deposits[(id + i) % NSLOTS] += amount;
            } else {
                pthread_mutex_lock(&ledger.lock);
                ledger.total += amount;
                ledger.deposits[(id * 2 + i) % NSLOTS] += amount;
                pthread_mutex_unlock(&ledger.lock);
            }
            mine += amount;
        }
        pthread_mutex_lock(&tally_lock);
        tally += mine;
        pthread_mutex_unlock(&tally_lock);
    }
};

int wait_for_c_workers(int c_workers)
{
    pthread_mutex_lock(&ledger.lock);
    while (ledger.c_done < c_workers)
        pthread_cond_wait(&ledger.changed, &ledger.lock);
    int seen = ledger.c_done;
    pthread_mutex_unlock(&ledger.lock);
    return seen;
}

} // namespace

extern "C" long app_run(int nthreads, int rounds, int c_workers)
{
    std::vector<std::thread> threads;
    int seen = 0;
    threads.emplace_back([&seen, c_workers] { seen = wait_for_c_workers(c_workers); });
    for (int t = 0; t < nthreads; t++) {
        Depositor d{t, rounds};
        threads.emplace_back([d] { d.run(); });
    }
    for (auto &t : threads)
        t.join();
    if (seen != c_workers)
        std::fprintf(stderr, "waiter saw %d C workers, expected %d\n", seen, c_workers);
    pthread_mutex_lock(&tally_lock);
    long result = tally;
    pthread_mutex_unlock(&tally_lock);
    return result;
}
