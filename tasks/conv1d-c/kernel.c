/* Depthwise 1-D convolution, parameterised by params.h (see task.toml for what each knob
   does). */
#include "kernel.h"
#include "params.h"

/* One channel, outputs [t0, t1). Always inlined, so that a constant `taps` unrolls. */
static inline __attribute__((always_inline)) void span(int t0, int t1, int taps, const float *x, const float *w, float *y) {
#if LOOP == 0
    /* Output-stationary: UNROLL outputs accumulate together over the taps. */
    int t = t0;
    for (; t + UNROLL <= t1; t += UNROLL) {
        float acc[UNROLL] = {0};
        for (int k = 0; k < taps; k++)
            for (int u = 0; u < UNROLL; u++) acc[u] += w[k] * x[t + u + k];
        for (int u = 0; u < UNROLL; u++) y[t + u] = acc[u];
    }
    for (; t < t1; t++) {
        float acc = 0.0f;
        for (int k = 0; k < taps; k++) acc += w[k] * x[t + k];
        y[t] = acc;
    }
#else
    /* Tap-outer: y is swept once per UNROLL taps, each sweep a vectorizable stream over t. */
    for (int t = t0; t < t1; t++) y[t] = 0.0f;
    int k = 0;
    for (; k + UNROLL <= taps; k += UNROLL)
        for (int t = t0; t < t1; t++) {
            float s = y[t];
            for (int u = 0; u < UNROLL; u++) s += w[k + u] * x[t + k + u];
            y[t] = s;
        }
    for (; k < taps; k++)
        for (int t = t0; t < t1; t++) y[t] += w[k] * x[t + k];
#endif
}

static inline __attribute__((always_inline)) void channel(int length, int taps, const float *x, const float *w, float *y) {
#if BLOCK_T == 0
    span(0, length, taps, x, w, y);
#else
    for (int t0 = 0; t0 < length; t0 += BLOCK_T)
        span(t0, t0 + BLOCK_T < length ? t0 + BLOCK_T : length, taps, x, w, y);
#endif
}

void conv1d(int channels, int length, int taps, const float *x, const float *w, float *y) {
    long stride = (long)length + taps - 1;
    for (int c = 0; c < channels; c++) {
        const float *xc = x + c * stride, *wc = w + (long)c * taps;
        float *yc = y + (long)c * length;
#if SPECIALIZE
        /* Copies of the loops for the common short filters, with the tap count a constant. */
        if (taps == 4) channel(length, 4, xc, wc, yc);
        else if (taps == 3) channel(length, 3, xc, wc, yc);
        else channel(length, taps, xc, wc, yc);
#else
        channel(length, taps, xc, wc, yc);
#endif
    }
}
