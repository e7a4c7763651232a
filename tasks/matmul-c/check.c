/* Correctness check: compares gemm() with a double-precision reference on random inputs
   (seeded by POLYMORPH_SEED), odd shapes and the workload's shapes, with C pre-filled with NaN
   and the same buffers reused with fresh data. Exit 0 only when every element is within tolerance. */
#include "harness.h"
#include "kernel.h"
#include <math.h>

static int check_shape(int m, int n, int k, float *A, float *B, float *C, const char *label) {
    fill_random(A, (long)m * k);
    fill_random(B, (long)k * n);
    for (long i = 0; i < (long)m * n; i++) C[i] = NAN;
    gemm(m, n, k, A, B, C);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double ref = 0, mag = 0;
            for (int p = 0; p < k; p++) {
                double t = (double)A[(long)i * k + p] * B[(long)p * n + j];
                ref += t;
                mag += fabs(t);
            }
            double got = C[(long)i * n + j];
            double tol = 1e-5 * sqrt((double)k) * mag + 1e-6;
            if (!(fabs(got - ref) <= tol)) {
                printf("FAIL %s (M=%d N=%d K=%d): C[%d][%d] = %g, expected %g\n", label, m, n, k, i, j, got, ref);
                return 1;
            }
        }
    return 0;
}

int main(void) {
    rng_seed_from_env();
    static const int odd[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {1, 100, 129},
                                 {8, 64, 64}, {13, 257, 31}, {2, 1000, 3}, {7, 9, 300}};
    struct gemm_case cases[MAX_CASES];
    int ncases = read_workload(workload_path(), cases);
    long max_a = 0, max_b = 0, max_c = 0;
    for (unsigned s = 0; s < sizeof odd / sizeof odd[0]; s++) {
        long m = odd[s][0], n = odd[s][1], k = odd[s][2];
        if (m * k > max_a) max_a = m * k;
        if (k * n > max_b) max_b = k * n;
        if (m * n > max_c) max_c = m * n;
    }
    for (int c = 0; c < ncases; c++) {
        long m = cases[c].m, n = cases[c].n, k = cases[c].k;
        if (m * k > max_a) max_a = m * k;
        if (k * n > max_b) max_b = k * n;
        if (m * n > max_c) max_c = m * n;
    }
    float *A = malloc(max_a * sizeof(float)), *B = malloc(max_b * sizeof(float)), *C = malloc(max_c * sizeof(float));
    if (!A || !B || !C) { fprintf(stderr, "out of memory\n"); return 2; }
    int failures = 0;
    /* Two passes over the same buffers with new data: a kernel that caches results fails the second. */
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned s = 0; s < sizeof odd / sizeof odd[0]; s++)
            failures += check_shape(odd[s][0], odd[s][1], odd[s][2], A, B, C, "odd shape");
        for (int c = 0; c < ncases; c++)
            failures += check_shape(cases[c].m, cases[c].n, cases[c].k, A, B, C, cases[c].name);
    }
    if (failures) { printf("%d shape(s) wrong\n", failures); return 1; }
    printf("ok\n");
    return 0;
}
