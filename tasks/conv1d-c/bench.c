/* Benchmark: times conv1d() on each shape of the workload (POLYMORPH_WORKLOAD, default
   workloads/filters.json) and prints one JSON metric line per shape, in GFLOP/s (best of
   several repetitions after a warm-up). Every call gets a fresh signal x (the filters w stay),
   and after every call VERIFIED_PER_CALL outputs, drawn once it has returned, are compared with
   a double-precision reference (harness.h's guard); the line's "verified" counts them. */
#include "harness.h"
#include "kernel.h"
#include <math.h>

#define MIN_REPS 5
#define MIN_TIME_S 0.04
#define MAX_REPS 200

/* Outputs at positions drawn after the call, each within the check's tolerance. */
static void verify_call(int ch, int len, int taps, const float *x, const float *w, const float *y, const char *name) {
    long stride = (long)len + taps - 1;
    rng_seed_unpredictable();
    for (int s = 0; s < VERIFIED_PER_CALL; s++) {
        long c = rng_below(ch), t = rng_below(len);
        double ref = 0, mag = 0;
        for (long k = 0; k < taps; k++) {
            double p = (double)w[c * taps + k] * x[c * stride + t + k];
            ref += p;
            mag += fabs(p);
        }
        double got = y[c * len + t], tol = 1e-5 * sqrt((double)taps) * mag + 1e-6;
        if (!(fabs(got - ref) <= tol)) {
            printf("FAIL bench %s: y[%ld][%ld] = %g after a timed call, expected %g\n", name, c, t, got, ref);
            exit(1);
        }
    }
}

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
        verify_call(ch, len, k, x, w, y, cases[c].name);
        double best = 1e30, total = 0;
        long verified = 0;
        for (int rep = 0; rep < MAX_REPS && (rep < MIN_REPS || total < MIN_TIME_S); rep++) {
            for (long i = 0; i < nx; i++) x[i] = rng_float(1.0f);
            double t0 = now_s();
            conv1d(ch, len, k, x, w, y);
            double dt = now_s() - t0;
            verify_call(ch, len, k, x, w, y, cases[c].name);
            verified += VERIFIED_PER_CALL;
            total += dt;
            if (dt < best) best = dt;
        }
        printf("{\"metric\": \"gflops\", \"case\": \"%s\", \"value\": %.4f, \"verified\": %ld}\n", cases[c].name,
               2.0 * ch * len * k / best * 1e-9, verified);
        free(x); free(w); free(y);
    }
    return 0;
}
