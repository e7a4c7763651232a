/* Benchmark: times softmax_rows() on each shape of the workload (POLYMORPH_WORKLOAD, default
   workloads/attention.json) and prints one JSON metric line per shape, in GB/s of input read
   and output written (best of several repetitions after a warm-up). Every call gets fresh
   scores x, and after every call VERIFIED_PER_CALL outputs (four in each of four rows), drawn
   once it has returned, are compared with a double-precision reference (harness.h's guard);
   the line's "verified" counts them. */
#include "harness.h"
#include "kernel.h"
#include <math.h>

#define MIN_REPS 5
#define MIN_TIME_S 0.04
#define MAX_REPS 200
/* Rows checked per call; VERIFIED_PER_CALL / ROWS_CHECKED outputs in each. */
#define ROWS_CHECKED 4

/* Outputs at positions drawn after the call, each within the check's tolerance. */
static void verify_call(int rows, int cols, const float *x, const float *y, const char *name) {
    rng_seed_unpredictable();
    double tol = 2e-5 + 5e-7 * sqrt((double)cols);
    for (int r = 0; r < ROWS_CHECKED; r++) {
        long i = rng_below(rows);
        const float *xr = x + i * cols;
        double max = xr[0], sum = 0;
        for (int j = 1; j < cols; j++) max = xr[j] > max ? xr[j] : max;
        for (int j = 0; j < cols; j++) sum += exp((double)xr[j] - max);
        for (int s = 0; s < VERIFIED_PER_CALL / ROWS_CHECKED; s++) {
            long j = rng_below(cols);
            double ref = exp((double)xr[j] - max) / sum, got = y[i * cols + j];
            if (!(fabs(got - ref) <= tol * ref + 1e-12)) {
                printf("FAIL bench %s: y[%ld][%ld] = %g after a timed call, expected %g\n", name, i, j, got, ref);
                exit(1);
            }
        }
    }
}

int main(void) {
    rng_seed_from_env();
    struct softmax_case cases[MAX_CASES];
    int ncases = read_workload(workload_path(), cases);
    for (int c = 0; c < ncases; c++) {
        int rows = cases[c].rows, cols = cases[c].cols;
        long n = (long)rows * cols;
        float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
        if (!x || !y) { fprintf(stderr, "out of memory\n"); return 2; }
        for (long i = 0; i < n; i++) x[i] = rng_float(8.0f);
        softmax_rows(rows, cols, x, y); /* warm-up */
        verify_call(rows, cols, x, y, cases[c].name);
        double best = 1e30, total = 0;
        long verified = 0;
        for (int rep = 0; rep < MAX_REPS && (rep < MIN_REPS || total < MIN_TIME_S); rep++) {
            for (long i = 0; i < n; i++) x[i] = rng_float(8.0f);
            double t0 = now_s();
            softmax_rows(rows, cols, x, y);
            double dt = now_s() - t0;
            verify_call(rows, cols, x, y, cases[c].name);
            verified += VERIFIED_PER_CALL;
            total += dt;
            if (dt < best) best = dt;
        }
        printf("{\"metric\": \"gbps\", \"case\": \"%s\", \"value\": %.4f, \"verified\": %ld}\n", cases[c].name,
               2.0 * n * sizeof(float) / best * 1e-9, verified);
        free(x); free(y);
    }
    return 0;
}
