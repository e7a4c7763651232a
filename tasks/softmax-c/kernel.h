/* The kernel's interface: harness-owned, a candidate may not change it. */
#ifndef KERNEL_H
#define KERNEL_H
/* Row-wise softmax: for each of `rows` rows of `cols` floats in x (row-major, densely packed),
   y[i][j] = exp(x[i][j] - max_j x[i][j]) / sum_j exp(x[i][j] - max_j x[i][j]).
   Every element of y must be written; x must not be modified. */
void softmax_rows(int rows, int cols, const float *x, float *y);
#endif
