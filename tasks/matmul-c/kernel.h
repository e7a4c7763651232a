/* The kernel's interface: harness-owned, a candidate may not change it. */
#ifndef KERNEL_H
#define KERNEL_H
/* C = A * B. A is M x K, B is K x N, C is M x N, all row-major and densely packed.
   Every element of C must be written. */
void gemm(int M, int N, int K, const float *A, const float *B, float *C);
#endif
