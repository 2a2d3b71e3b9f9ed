#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
extern void link_error (void);
int main (void)
{
  if (0)
    {
      pthread_mutex_lock (&m);
      link_error ();
      pthread_mutex_unlock (&m);
    }
  return 0;
}
