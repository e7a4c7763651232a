/* Benchmark: times sort_u32() on each case of the workload (POLYMORPH_WORKLOAD, default
   workloads/arrays.json): `count` arrays of `n` random keys below 2^bits, drawn afresh before
   every repetition (the drawing and copying are not timed). After every repetition each array
   is checked whole: in order, and holding the keys it was given (a sum of the keys hashed with a
   salt drawn once the sort has returned, harness.h's guard); the line's "verified" counts the
   keys checked. Prints one JSON metric line per case, in millions of keys sorted per second
   (best of several repetitions after a warm-up). */
#include "harness.h"
#include "kernel.h"

#define MIN_REPS 5
#define MIN_TIME_S 0.04
#define MAX_REPS 200

/* A 64-bit mix of a key and the salt (splitmix64's finaliser). */
static inline uint64_t mix(uint32_t key, uint64_t salt) {
    uint64_t z = key ^ salt;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Every array of `keys` in order and a permutation of the same array of `orig`. */
static void verify_call(int count, int n, const uint32_t *orig, const uint32_t *keys, const char *name) {
    rng_seed_unpredictable();
    uint64_t salt = rng_next();
    for (long a = 0; a < count; a++) {
        const uint32_t *in = orig + a * n, *out = keys + a * n;
        uint64_t want = 0, got = 0;
        for (long i = 0; i < n; i++) {
            want += mix(in[i], salt);
            got += mix(out[i], salt);
            if (i > 0 && out[i - 1] > out[i]) {
                printf("FAIL bench %s: array %ld out of order at %ld after a timed sort\n", name, a, i);
                exit(1);
            }
        }
        if (want != got) {
            printf("FAIL bench %s: array %ld holds other keys than it was given after a timed sort\n", name, a);
            exit(1);
        }
    }
}

int main(void) {
    rng_seed_from_env();
    struct sort_case cases[MAX_CASES];
    int ncases = read_workload(workload_path(), cases);
    for (int c = 0; c < ncases; c++) {
        long total_keys = (long)cases[c].count * cases[c].n;
        uint32_t *orig = malloc(total_keys * 4), *keys = malloc(total_keys * 4), *scratch = malloc((size_t)cases[c].n * 4);
        if (!orig || !keys || !scratch) { fprintf(stderr, "out of memory\n"); return 2; }
        double best = 1e30, total = 0;
        long verified = 0;
        for (int rep = 0; rep < MAX_REPS && (rep < MIN_REPS + 1 || total < MIN_TIME_S); rep++) {
            for (long i = 0; i < total_keys; i++) orig[i] = rng_key(cases[c].bits);
            memcpy(keys, orig, total_keys * 4);
            double t0 = now_s();
            for (int a = 0; a < cases[c].count; a++) sort_u32(cases[c].n, keys + (long)a * cases[c].n, scratch);
            double dt = now_s() - t0;
            verify_call(cases[c].count, cases[c].n, orig, keys, cases[c].name);
            if (rep == 0) continue; /* warm-up */
            verified += total_keys;
            total += dt;
            if (dt < best) best = dt;
        }
        printf("{\"metric\": \"mkeys\", \"case\": \"%s\", \"value\": %.4f, \"verified\": %ld}\n", cases[c].name,
               total_keys / best * 1e-6, verified);
        free(orig); free(keys); free(scratch);
    }
    return 0;
}
