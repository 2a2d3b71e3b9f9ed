#include <pthread.h>
static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
int foo(char *p)
{
  int h = 0;
  pthread_mutex_lock(&a);
  do
    {
      ++h;
      pthread_mutex_lock(&b); ++p; pthread_mutex_unlock(&b);
    }
  while (*p);
  pthread_mutex_unlock(&a);
  return h;
}
int main(void) { return foo("a") != 1; }
