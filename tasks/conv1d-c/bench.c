/* Benchmark: times conv1d() on each shape of the workload (POLYMORPH_WORKLOAD, default
   workloads/filters.json) and prints one JSON metric line per shape, in GFLOP/s (best of
   several repetitions after a warm-up). */
#include "harness.h"
#include "kernel.h"

#define MIN_REPS 5
#define MIN_TIME_S 0.04
#define MAX_REPS 200

int main(void) {
    rng_seed_from_env();
    struct conv_case cases[MAX_CASES];
    int ncases = read_workload(workload_path(), cases);
    for (int c = 0; c < ncases; c++) {
        int ch = cases[c].channels, len = cases[c].length, k = cases[c].taps;
        long nx = (long)ch * (len + k - 1);
        float *x = malloc(nx * sizeof(float)), *w = malloc((long)ch * k * sizeof(float)),
              *y = malloc((long)ch * len * sizeof(float));
        if (!x || !w || !y) { fprintf(stderr, "out of memory\n"); return 2; }
        for (long i = 0; i < nx; i++) x[i] = rng_float(1.0f);
        for (long i = 0; i < (long)ch * k; i++) w[i] = rng_float(1.0f);
        conv1d(ch, len, k, x, w, y); /* warm-up */
        double best = 1e30, total = 0;
        for (int rep = 0; rep < MAX_REPS && (rep < MIN_REPS || total < MIN_TIME_S); rep++) {
            double t0 = now_s();
            conv1d(ch, len, k, x, w, y);
            double dt = now_s() - t0;
            total += dt;
            if (dt < best) best = dt;
        }
        volatile float sink = y[(long)ch * len - 1];
        (void)sink;
        printf("{\"metric\": \"gflops\", \"case\": \"%s\", \"value\": %.4f}\n", cases[c].name, 2.0 * ch * len * k / best * 1e-9);
        free(x); free(w); free(y);
    }
    return 0;
}
