#ifndef PROGRAM_H
#define PROGRAM_H

void counter_init(void);
void counter_add(long n);
long counter_get(void);
void sequence_init(void);
unsigned long sequence_next(void);

#endif
