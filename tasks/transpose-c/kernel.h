/* The kernel's interface: harness-owned, a candidate may not change it. */
#ifndef KERNEL_H
#define KERNEL_H
/* Out-of-place transpose: in is rows x cols, out is cols x rows, both row-major and densely
   packed: out[j][i] = in[i][j]. Every element of out must be written; in must not be modified. */
void transpose(int rows, int cols, const float *in, float *out);
#endif
