/* Uses locks.h's checked LOCKRET. */
#include "locks.h"
#include "program.h"

static lock_basic_type counter_lock;
static long counter;

void counter_init(void)
{
	lock_basic_init(&counter_lock);
}

void counter_add(long n)
{
	lock_basic_lock(&counter_lock);
	counter += n;
	lock_basic_unlock(&counter_lock);
}

long counter_get(void)
{
	long v;
	lock_basic_lock(&counter_lock);
	v = counter;
	lock_basic_unlock(&counter_lock);
	return v;
}
