/* Benchmark: times transpose() on each shape of the workload (POLYMORPH_WORKLOAD, default
   workloads/layouts.json) and prints one JSON metric line per shape, in GB/s of input read
   and output written (best of several repetitions after a warm-up). Every call gets a fresh
   input, and after every call VERIFIED_PER_CALL outputs, drawn once it has returned, are
   compared with the input (harness.h's guard); the line's "verified" counts them. */
#include "harness.h"
#include "kernel.h"

#define MIN_REPS 5
#define MIN_TIME_S 0.04
#define MAX_REPS 200

/* Outputs at positions drawn after the call, each equal to its input element. */
static void verify_call(int rows, int cols, const float *x, const float *y, const char *name) {
    rng_seed_unpredictable();
    for (int s = 0; s < VERIFIED_PER_CALL; s++) {
        long i = rng_below(rows), j = rng_below(cols);
        if (y[j * rows + i] != x[i * cols + j]) {
            printf("FAIL bench %s: out[%ld][%ld] = %g after a timed call, expected %g\n", name, j, i,
                   y[j * rows + i], x[i * cols + j]);
            exit(1);
        }
    }
}

int main(void) {
    rng_seed_from_env();
    struct transpose_case cases[MAX_CASES];
    int ncases = read_workload(workload_path(), cases);
    for (int c = 0; c < ncases; c++) {
        int rows = cases[c].rows, cols = cases[c].cols;
        long n = (long)rows * cols;
        float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
        if (!x || !y) { fprintf(stderr, "out of memory\n"); return 2; }
        for (long i = 0; i < n; i++) x[i] = rng_float(8.0f);
        transpose(rows, cols, x, y); /* warm-up */
        verify_call(rows, cols, x, y, cases[c].name);
        double best = 1e30, total = 0;
        long verified = 0;
        for (int rep = 0; rep < MAX_REPS && (rep < MIN_REPS || total < MIN_TIME_S); rep++) {
            for (long i = 0; i < n; i++) x[i] = rng_float(8.0f);
            double t0 = now_s();
            transpose(rows, cols, x, y);
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
