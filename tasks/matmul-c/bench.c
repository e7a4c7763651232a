/* Benchmark: times gemm() on each shape of the workload (POLYMORPH_WORKLOAD, default
   workloads/decode.json) and prints one JSON metric line per shape, in GFLOP/s (best of
   several repetitions after a warm-up). */
#include "harness.h"
#include "kernel.h"

/* Enough repetitions for a stable best-of, bounded so that slow kernels still finish quickly. */
#define MIN_REPS 5
#define MIN_TIME_S 0.05
#define MAX_REPS 200

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
        double best = 1e30, total = 0;
        for (int rep = 0; rep < MAX_REPS && (rep < MIN_REPS || total < MIN_TIME_S); rep++) {
            double t0 = now_s();
            gemm(m, n, k, A, B, C);
            double dt = now_s() - t0;
            total += dt;
            if (dt < best) best = dt;
        }
        volatile float sink = C[(long)m * n - 1];
        (void)sink;
        printf("{\"metric\": \"gflops\", \"case\": \"%s\", \"value\": %.4f}\n", cases[c].name, 2.0 * m * n * k / best * 1e-9);
        free(A); free(B); free(C);
    }
    return 0;
}
