/* Benchmark: times gemm() on each shape of the workload (POLYMORPH_WORKLOAD, default
   workloads/decode.json) and prints one JSON metric line per shape, in GFLOP/s (best of
   several repetitions after a warm-up). Every call gets fresh activations A (the weights B stay,
   as in inference), and after every call VERIFIED_PER_CALL elements of C, drawn once it has
   returned, are compared with a double-precision reference (harness.h's guard); the line's
   "verified" counts them. */
#include "harness.h"
#include "kernel.h"
#include <math.h>

/* Enough repetitions for a stable best-of, bounded so that slow kernels still finish quickly. */
#define MIN_REPS 5
#define MIN_TIME_S 0.05
#define MAX_REPS 200

/* Elements of C at positions drawn after the call, each within the check's tolerance. */
static void verify_call(int m, int n, int k, const float *A, const float *B, const float *C, const char *name) {
    rng_seed_unpredictable();
    for (int s = 0; s < VERIFIED_PER_CALL; s++) {
        long i = rng_below(m), j = rng_below(n);
        double ref = 0, mag = 0;
        for (long p = 0; p < k; p++) {
            double t = (double)A[i * k + p] * B[p * n + j];
            ref += t;
            mag += fabs(t);
        }
        double got = C[i * n + j], tol = 1e-5 * sqrt((double)k) * mag + 1e-6;
        if (!(fabs(got - ref) <= tol)) {
            printf("FAIL bench %s: C[%ld][%ld] = %g after a timed call, expected %g\n", name, i, j, got, ref);
            exit(1);
        }
    }
}

int main(void) {
    rng_seed_from_env();
    struct gemm_case cases[MAX_CASES];
    int ncases = read_workload(workload_path(), cases);
    for (int c = 0; c < ncases; c++) {
        int m = cases[c].m, n = cases[c].n, k = cases[c].k;
        float *A = malloc((long)m * k * sizeof(float)), *B = malloc((long)k * n * sizeof(float)),
              *C = malloc((long)m * n * sizeof(float));
        if (!A || !B || !C) { fprintf(stderr, "out of memory\n"); return 2; }
        fill_random(A, (long)m * k);
        fill_random(B, (long)k * n);
        gemm(m, n, k, A, B, C); /* warm-up */
        verify_call(m, n, k, A, B, C, cases[c].name);
        double best = 1e30, total = 0;
        long verified = 0;
        for (int rep = 0; rep < MAX_REPS && (rep < MIN_REPS || total < MIN_TIME_S); rep++) {
            fill_random(A, (long)m * k);
            double t0 = now_s();
            gemm(m, n, k, A, B, C);
            double dt = now_s() - t0;
            verify_call(m, n, k, A, B, C, cases[c].name);
            verified += VERIFIED_PER_CALL;
            total += dt;
            if (dt < best) best = dt;
        }
        printf("{\"metric\": \"gflops\", \"case\": \"%s\", \"value\": %.4f, \"verified\": %ld}\n", cases[c].name,
               2.0 * m * n * k / best * 1e-9, verified);
        free(A); free(B); free(C);
    }
    return 0;
}
