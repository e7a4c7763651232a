/* The kernel's interface: harness-owned, a candidate may not change it. */
#ifndef KERNEL_H
#define KERNEL_H
/* Depthwise 1-D convolution (each channel its own filter), as in short causal convolutions
   and FIR filter banks: x is channels x (length + taps - 1), w is channels x taps, y is
   channels x length, all row-major and densely packed:
   y[c][t] = sum over k < taps of w[c][k] * x[c][t + k].
   Every element of y must be written; x and w must not be modified. */
void conv1d(int channels, int length, int taps, const float *x, const float *w, float *y);
#endif
