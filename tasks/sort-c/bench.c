/* Benchmark: times sort_u32() on each case of the workload (POLYMORPH_WORKLOAD, default
   workloads/arrays.json): `count` arrays of `n` random keys below 2^bits, each sorted from the
   same unsorted copy every repetition (the copying is not timed). Prints one JSON metric line
   per case, in millions of keys sorted per second (best of several repetitions). */
#include "harness.h"
#include "kernel.h"

#define MIN_REPS 5
#define MIN_TIME_S 0.04
#define MAX_REPS 200

int main(void) {
    rng_seed_from_env();
    struct sort_case cases[MAX_CASES];
    int ncases = read_workload(workload_path(), cases);
    for (int c = 0; c < ncases; c++) {
        long total_keys = (long)cases[c].count * cases[c].n;
        uint32_t *orig = malloc(total_keys * 4), *keys = malloc(total_keys * 4), *scratch = malloc((size_t)cases[c].n * 4);
        if (!orig || !keys || !scratch) { fprintf(stderr, "out of memory\n"); return 2; }
        for (long i = 0; i < total_keys; i++) orig[i] = rng_key(cases[c].bits);
        double best = 1e30, total = 0;
        for (int rep = 0; rep < MAX_REPS && (rep < MIN_REPS + 1 || total < MIN_TIME_S); rep++) {
            memcpy(keys, orig, total_keys * 4);
            double t0 = now_s();
            for (int a = 0; a < cases[c].count; a++) sort_u32(cases[c].n, keys + (long)a * cases[c].n, scratch);
            double dt = now_s() - t0;
            if (rep == 0) continue; /* warm-up */
            total += dt;
            if (dt < best) best = dt;
        }
        volatile uint32_t sink = keys[total_keys - 1];
        (void)sink;
        printf("{\"metric\": \"mkeys\", \"case\": \"%s\", \"value\": %.4f}\n", cases[c].name, total_keys / best * 1e-6);
        free(orig); free(keys); free(scratch);
    }
    return 0;
}
