/* The kernel's interface: harness-owned, a candidate may not change it. */
#ifndef KERNEL_H
#define KERNEL_H
#include <stdint.h>
/* Sorts keys[0..n) ascending in place; scratch[0..n) is free for the kernel's use. */
void sort_u32(int n, uint32_t *keys, uint32_t *scratch);
#endif
