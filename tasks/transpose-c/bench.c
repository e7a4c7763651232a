/* Benchmark: times transpose() on each shape of the workload (POLYMORPH_WORKLOAD, default
   workloads/layouts.json) and prints one JSON metric line per shape, in GB/s of input read
   and output written (best of several repetitions after a warm-up). */
#include "harness.h"
#include "kernel.h"

#define MIN_REPS 5
#define MIN_TIME_S 0.04
#define MAX_REPS 200

int main(void) {
    rng_seed_from_env();
    struct transpose_case cases[MAX_CASES];
    int ncases = read_workload(workload_path(), cases);
    for (int c = 0; c < ncases; c++) {
        long n = (long)cases[c].rows * cases[c].cols;
        float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
        if (!x || !y) { fprintf(stderr, "out of memory\n"); return 2; }
        for (long i = 0; i < n; i++) x[i] = rng_float(8.0f);
        transpose(cases[c].rows, cases[c].cols, x, y); /* warm-up */
        double best = 1e30, total = 0;
        for (int rep = 0; rep < MAX_REPS && (rep < MIN_REPS || total < MIN_TIME_S); rep++) {
            double t0 = now_s();
            transpose(cases[c].rows, cases[c].cols, x, y);
            double dt = now_s() - t0;
            total += dt;
            if (dt < best) best = dt;
        }
        volatile float sink = y[n - 1];
        (void)sink;
        printf("{\"metric\": \"gbps\", \"case\": \"%s\", \"value\": %.4f}\n", cases[c].name, 2.0 * n * sizeof(float) / best * 1e-9);
        free(x); free(y);
    }
    return 0;
}
