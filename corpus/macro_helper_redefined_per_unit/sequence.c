/* unbound's compat/arc4_lock.c: its own LOCKRET, defined before it includes locks.h, passes the
 * call through unchecked; the other files keep the checked one. */
#define LOCKRET(func) func
#include "locks.h"
#include "program.h"

static lock_basic_type seq_lock;
static unsigned long seq;

void sequence_init(void)
{
	lock_basic_init(&seq_lock);
}

unsigned long sequence_next(void)
{
	unsigned long v;
	lock_basic_lock(&seq_lock);
	v = ++seq;
	lock_basic_unlock(&seq_lock);
	return v;
}
