/* Row-wise softmax, parameterised by params.h (see task.toml for what each knob does). */
#include "kernel.h"
#include "params.h"
#include <math.h>
#include <string.h>

#if EXP == 0
/* The C library's expf: accurate, but a call per element that the compiler cannot vectorize. */
static inline float exp_neg(float x) { return expf(x); }
#else
/* exp(x) for x <= 0 as 2^n * p(r), r = x - n ln 2 in [-ln2/2, ln2/2]: a polynomial the compiler
   can vectorize. EXP 1 keeps Taylor terms to r^6 (error about 1e-7), EXP 2 to r^5 (2e-6). */
static inline float exp_neg(float x) {
    unsigned bits_x; /* below -87 (and -inf) becomes -87; compared as bits, which vectorizes */
    memcpy(&bits_x, &x, sizeof bits_x);
    bits_x = bits_x > 0xC2AE0000u ? 0xC2AE0000u : bits_x;
    memcpy(&x, &bits_x, sizeof x);
    int ni = (int)(x * 1.44269504f - 0.5f); /* x <= 0: rounds to nearest */
    float n = (float)ni;
    float r = x - n * 0.693145752f - n * 1.42860677e-6f;
#if EXP == 1
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
#else
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120)))));
#endif
    int bits = (ni + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}
#endif

#if PASSES == 3
/* The row's maximum, in UNROLL independent lanes. */
static float row_max(int cols, const float *x) {
    float m[UNROLL];
    for (int u = 0; u < UNROLL; u++) m[u] = -INFINITY;
    int j = 0;
    for (; j + UNROLL <= cols; j += UNROLL)
        for (int u = 0; u < UNROLL; u++) m[u] = x[j + u] > m[u] ? x[j + u] : m[u];
    for (; j < cols; j++) m[0] = x[j] > m[0] ? x[j] : m[0];
    float best = m[0];
    for (int u = 1; u < UNROLL; u++) best = m[u] > best ? m[u] : best;
    return best;
}

/* The sum of exp(x - max), in UNROLL lanes; with STORE each exponential is kept in y. */
static float row_sum(int cols, const float *x, float max, float *y) {
    float s[UNROLL];
    for (int u = 0; u < UNROLL; u++) s[u] = 0.0f;
    int j = 0;
    for (; j + UNROLL <= cols; j += UNROLL)
        for (int u = 0; u < UNROLL; u++) {
            float e = exp_neg(x[j + u] - max);
#if STORE
            y[j + u] = e;
#endif
            s[u] += e;
        }
    for (; j < cols; j++) {
        float e = exp_neg(x[j] - max);
#if STORE
        y[j] = e;
#endif
        s[0] += e;
    }
    (void)y;
    float sum = 0.0f;
    for (int u = 0; u < UNROLL; u++) sum += s[u];
    return sum;
}
#else
/* Maximum and sum in one pass (the online softmax): each lane rescales its running sum when
   its maximum grows. */
static void row_max_sum(int cols, const float *x, float *max, float *sum) {
    float m[UNROLL], s[UNROLL];
    for (int u = 0; u < UNROLL; u++) m[u] = -INFINITY, s[u] = 0.0f;
    int j = 0;
    for (; j + UNROLL <= cols; j += UNROLL)
        for (int u = 0; u < UNROLL; u++) {
            float v = x[j + u], mn = v > m[u] ? v : m[u];
            s[u] = s[u] * exp_neg(m[u] - mn) + exp_neg(v - mn);
            m[u] = mn;
        }
    for (; j < cols; j++) {
        float v = x[j], mn = v > m[0] ? v : m[0];
        s[0] = s[0] * exp_neg(m[0] - mn) + exp_neg(v - mn);
        m[0] = mn;
    }
    float best = m[0];
    for (int u = 1; u < UNROLL; u++) best = m[u] > best ? m[u] : best;
    float total = 0.0f;
    for (int u = 0; u < UNROLL; u++)
        if (s[u] > 0.0f) total += s[u] * exp_neg(m[u] - best);
    *max = best;
    *sum = total;
}
#endif

void softmax_rows(int rows, int cols, const float *x, float *y) {
    for (int i = 0; i < rows; i++) {
        const float *xr = x + (long)i * cols;
        float *yr = y + (long)i * cols;
#if PASSES == 3
        float max = row_max(cols, xr);
        float sum = row_sum(cols, xr, max, yr);
#else
        float max, sum;
        row_max_sum(cols, xr, &max, &sum);
#endif
#if RECIP
        float inv = 1.0f / sum;
#define SCALE(e) ((e) * inv)
#else
#define SCALE(e) ((e) / sum)
#endif
#if PASSES == 3 && STORE
        for (int j = 0; j < cols; j++) yr[j] = SCALE(yr[j]);
#else
        for (int j = 0; j < cols; j++) yr[j] = SCALE(exp_neg(xr[j] - max));
#endif
#undef SCALE
    }
}
