/* The project's umbrella header: the .c files include this one, never mutexes.h itself. */
#ifndef INTERNAL_H
#define INTERNAL_H
#include "mutexes.h"

struct daemon {
    pthread_mutex_t cleanup_mutex;
    int connections;
    long served;
};
#endif
