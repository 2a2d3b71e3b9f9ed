#ifndef STORE_H
#define STORE_H

void store_write(int pages);
long store_pages(void);

#endif
