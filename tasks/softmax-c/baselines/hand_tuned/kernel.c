/* Hand-tuned row-wise softmax: three passes over each row (maximum, exponentials stored in y
   with their sum, scaling by the reciprocal), each over 16 floats at a time in GCC vector
   extensions, with a polynomial exponential (2^n * p(r), Taylor terms to r^6) the compiler
   keeps in vector registers. */
#include "kernel.h"
#include <math.h>
#include <string.h>

typedef float v16 __attribute__((vector_size(64)));
typedef int i16 __attribute__((vector_size(64)));
#define W 16

static inline v16 load(const float *p) { v16 v; memcpy(&v, p, sizeof v); return v; }
static inline void store(float *p, v16 v) { memcpy(p, &v, sizeof v); }

/* exp(x) for x <= 0, lane by lane; below -87 gives about 2^-126. */
static inline v16 vexp(v16 x) {
    i16 low = x < -87.0f;
    x = (v16)(((i16)x & ~low) | ((i16)((v16){0} - 87.0f) & low));
    i16 ni = __builtin_convertvector(x * 1.44269504f - 0.5f, i16);
    v16 n = __builtin_convertvector(ni, v16);
    v16 r = x - n * 0.693145752f - n * 1.42860677e-6f;
    v16 p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    return p * (v16)((ni + 127) << 23);
}

static inline float exp1(float x) {
    float lane[W] = {x};
    v16 v = vexp(load(lane));
    return v[0];
}

void softmax_rows(int rows, int cols, const float *x, float *y) {
    for (int i = 0; i < rows; i++) {
        const float *xr = x + (long)i * cols;
        float *yr = y + (long)i * cols;
        int full = cols / W * W;
        float max = -INFINITY;
        if (full) {
            v16 m = load(xr);
            for (int j = W; j < full; j += W) {
                v16 v = load(xr + j);
                i16 gt = v > m;
                m = (v16)(((i16)v & gt) | ((i16)m & ~gt));
            }
            for (int u = 0; u < W; u++) max = m[u] > max ? m[u] : max;
        }
        for (int j = full; j < cols; j++) max = xr[j] > max ? xr[j] : max;
        v16 s = {0};
        for (int j = 0; j < full; j += W) {
            v16 e = vexp(load(xr + j) - max);
            store(yr + j, e);
            s += e;
        }
        float sum = 0.0f;
        for (int u = 0; u < W; u++) sum += s[u];
        for (int j = full; j < cols; j++) sum += yr[j] = exp1(xr[j] - max);
        float inv = 1.0f / sum;
        for (int j = 0; j < full; j += W) store(yr + j, load(yr + j) * inv);
        for (int j = full; j < cols; j++) yr[j] *= inv;
    }
}
