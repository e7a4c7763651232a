// Harness-owned correctness test: the kernel against a float64 reference on fresh random inputs
// (POLYMORPH_SEED), with the outputs poisoned before every call, the same buffers reused with
// new data, odd row counts and the workload's own shapes. Exit 0 only when every value is
// within bf16's rounding of the reference.
#include <math.h>
#include "harness.h"
#include "kernel.h"

// Tolerances: y is a product of bf16-rounded factors (a few ulps at 2^-8 each); the written
// residual must be h rounded to bf16 (one ulp).
#define Y_REL 0.02
#define Y_ABS 1e-3
#define R_REL (1.0 / 128)

static int check_shape(int rows, int hidden, __nv_bfloat16 *dx, __nv_bfloat16 *dr, __nv_bfloat16 *dw,
                       __nv_bfloat16 *dy, int pass) {
    size_t n = (size_t)rows * hidden;
    __nv_bfloat16 *x = (__nv_bfloat16 *)malloc(n * 2), *r = (__nv_bfloat16 *)malloc(n * 2);
    __nv_bfloat16 *w = (__nv_bfloat16 *)malloc(hidden * 2), *y = (__nv_bfloat16 *)malloc(n * 2);
    __nv_bfloat16 *r2 = (__nv_bfloat16 *)malloc(n * 2);
    fill(x, n, 2.0f);
    fill(r, n, 2.0f);
    fill(w, hidden, 1.5f);
    CUDA_CHECK(cudaMemcpy(dx, x, n * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dr, r, n * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dw, w, hidden * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dy, 0xFF, n * 2));  // NaN everywhere: an unwritten output fails
    add_rmsnorm(dx, dr, dw, dy, rows, hidden, EPS, 0);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(y, dy, n * 2, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(r2, dr, n * 2, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < rows && !bad; i++) {
        double ss = 0;
        for (int j = 0; j < hidden; j++) {
            double h = (double)__bfloat162float(x[(size_t)i * hidden + j]) +
                       (double)__bfloat162float(r[(size_t)i * hidden + j]);
            ss += h * h;
        }
        double scale = 1.0 / sqrt(ss / hidden + EPS);
        for (int j = 0; j < hidden && !bad; j++) {
            size_t k = (size_t)i * hidden + j;
            double h = (double)__bfloat162float(x[k]) + (double)__bfloat162float(r[k]);
            double hb = (double)__bfloat162float(__float2bfloat16((float)h));
            double want = hb * scale * (double)__bfloat162float(w[j]);
            double got = (double)__bfloat162float(y[k]);
            double res = (double)__bfloat162float(r2[k]);
            if (!(fabs(got - want) <= Y_ABS + Y_REL * fabs(want))) {
                printf("FAIL: y[%d][%d] = %g, want %g (rows %d, hidden %d, pass %d)\n", i, j, got, want,
                       rows, hidden, pass);
                bad = 1;
            } else if (!(fabs(res - h) <= R_REL * fabs(h) + 1e-6)) {
                printf("FAIL: residual[%d][%d] = %g, want %g (rows %d, hidden %d, pass %d)\n", i, j, res, h,
                       rows, hidden, pass);
                bad = 1;
            }
        }
    }
    free(x), free(r), free(w), free(y), free(r2);
    return bad;
}

int main(void) {
    seed_rng();
    int tokens[MAX_SHAPES], hidden[MAX_SHAPES], nt, nh;
    workload(tokens, &nt, hidden, &nh);
    // The workload's shapes (decode's all; prefill's first two token counts are plenty) and odd
    // row counts on every hidden size.
    int rows[MAX_SHAPES + 4] = {1, 3, 7, 33};
    int nr = 4;
    for (int i = 0; i < nt && nr < MAX_SHAPES + 4; i++) rows[nr++] = tokens[i] > 1024 ? 1024 + 17 : tokens[i];
    int max_rows = 0, max_hidden = 0;
    for (int i = 0; i < nr; i++) max_rows = rows[i] > max_rows ? rows[i] : max_rows;
    for (int i = 0; i < nh; i++) max_hidden = hidden[i] > max_hidden ? hidden[i] : max_hidden;
    size_t n = (size_t)max_rows * max_hidden;
    __nv_bfloat16 *dx, *dr, *dw, *dy;
    CUDA_CHECK(cudaMalloc(&dx, n * 2));
    CUDA_CHECK(cudaMalloc(&dr, n * 2));
    CUDA_CHECK(cudaMalloc(&dw, max_hidden * 2));
    CUDA_CHECK(cudaMalloc(&dy, n * 2));
    // Every shape twice on the same buffers with new data: nothing may be cached across calls.
    for (int pass = 0; pass < 2; pass++)
        for (int h = 0; h < nh; h++)
            for (int i = 0; i < nr; i++)
                if (check_shape(rows[i], hidden[h], dx, dr, dw, dy, pass)) return 1;
    printf("ok\n");
    return 0;
}
