/* Hand-tuned depthwise 1-D convolution: 32 outputs of a channel accumulate in registers over
   the taps (each tap's weight broadcast once, the signal read as overlapping vectors), with a
   copy of the loop for 4-tap filters in which the tap loop is unrolled; a scalar tail finishes
   each channel. */
#include "kernel.h"
#include <string.h>

typedef float v16 __attribute__((vector_size(64)));
#define W 32

static inline v16 load(const float *p) { v16 v; memcpy(&v, p, sizeof v); return v; }
static inline void store(float *p, v16 v) { memcpy(p, &v, sizeof v); }

static inline __attribute__((always_inline)) void channel(int length, int taps, const float *restrict x,
                                                          const float *restrict w, float *restrict y) {
    int t = 0;
    for (; t + W <= length; t += W) {
        v16 a0 = {0}, a1 = {0};
        for (int k = 0; k < taps; k++) {
            a0 += w[k] * load(x + t + k);
            a1 += w[k] * load(x + t + k + 16);
        }
        store(y + t, a0);
        store(y + t + 16, a1);
    }
    for (; t < length; t++) {
        float acc = 0.0f;
        for (int k = 0; k < taps; k++) acc += w[k] * x[t + k];
        y[t] = acc;
    }
}

void conv1d(int channels, int length, int taps, const float *x, const float *w, float *y) {
    long stride = (long)length + taps - 1;
    for (int c = 0; c < channels; c++) {
        const float *xc = x + c * stride, *wc = w + (long)c * taps;
        float *yc = y + (long)c * length;
        if (taps == 4) channel(length, 4, xc, wc, yc);
        else channel(length, taps, xc, wc, yc);
    }
}
