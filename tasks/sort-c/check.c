/* Correctness check: compares sort_u32() with the C library's qsort on random keys (seeded by
   POLYMORPH_SEED) of odd sizes and widths, all-equal keys, already sorted and reversed arrays
   and the workload's shapes, with scratch pre-filled with garbage and every shape run twice on
   the same buffers with fresh data. Exit 0 only when every array comes out sorted and holds
   the same keys it went in with. */
#include "harness.h"
#include "kernel.h"
#include <unistd.h>

/* Set while the kernel runs: a kernel that calls exit() to end the check early with success
   is turned into a failure. */
static volatile int in_kernel;

static void refuse_early_exit(void) {
    if (in_kernel) {
        printf("FAIL: the kernel called exit()\n");
        fflush(stdout);
        _exit(1);
    }
}

static int by_value(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

enum shape { RANDOM, EQUAL, SORTED, REVERSED };

static int check_round(int n, int bits, enum shape shape, uint32_t *keys, uint32_t *want, uint32_t *scratch, const char *label) {
    for (int i = 0; i < n; i++) {
        uint32_t k = rng_key(bits);
        keys[i] = shape == EQUAL ? 12345u & (uint32_t)((1ull << bits) - 1) : k;
        scratch[i] = (uint32_t)rng_next();
    }
    if (shape == SORTED || shape == REVERSED) qsort(keys, n, sizeof *keys, by_value);
    if (shape == REVERSED)
        for (int i = 0; i < n / 2; i++) {
            uint32_t t = keys[i];
            keys[i] = keys[n - 1 - i];
            keys[n - 1 - i] = t;
        }
    memcpy(want, keys, (size_t)n * sizeof *keys);
    qsort(want, n, sizeof *want, by_value);
    in_kernel = 1;
    sort_u32(n, keys, scratch);
    in_kernel = 0;
    for (int i = 0; i < n; i++)
        if (keys[i] != want[i]) {
            printf("FAIL %s (n=%d bits=%d): keys[%d] = %u, expected %u\n", label, n, bits, i, keys[i], want[i]);
            return 1;
        }
    return 0;
}

static int check_shape(int n, int bits, enum shape shape, uint32_t *keys, uint32_t *want, uint32_t *scratch, const char *label) {
    return check_round(n, bits, shape, keys, want, scratch, label) || check_round(n, bits, shape, keys, want, scratch, label);
}

int main(void) {
    atexit(refuse_early_exit);
    rng_seed_from_env();
    static const int odd[][2] = {{1, 32}, {2, 32}, {3, 5}, {17, 32}, {100, 1}, {255, 32}, {257, 11}, {1000, 32}, {4097, 20}, {70000, 32}};
    struct sort_case cases[MAX_CASES];
    int ncases = read_workload(workload_path(), cases);
    int max_n = 70000;
    for (int c = 0; c < ncases; c++) max_n = cases[c].n > max_n ? cases[c].n : max_n;
    uint32_t *keys = malloc((size_t)max_n * 4), *want = malloc((size_t)max_n * 4), *scratch = malloc((size_t)max_n * 4);
    if (!keys || !want || !scratch) { fprintf(stderr, "out of memory\n"); return 2; }
    int failures = 0;
    for (unsigned s = 0; s < sizeof odd / sizeof odd[0]; s++)
        for (int shape = RANDOM; shape <= REVERSED; shape++)
            failures += check_shape(odd[s][0], odd[s][1], shape, keys, want, scratch, "odd shape");
    for (int c = 0; c < ncases; c++)
        failures += check_shape(cases[c].n, cases[c].bits, RANDOM, keys, want, scratch, cases[c].name);
    if (failures) { printf("%d shape(s) wrong\n", failures); return 1; }
    printf("ok\n");
    return 0;
}
