/* Correctness check: compares transpose() element by element on random matrices (seeded by
   POLYMORPH_SEED) of odd shapes and of the workload's shapes, with out pre-filled with NaN and
   every shape run twice on the same buffers with fresh data. Exit 0 only when every element is
   exact and in is unchanged. */
#include "harness.h"
#include "kernel.h"
#include <math.h>
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

static int check_round(int rows, int cols, float *in, float *keep, float *out, const char *label) {
    long n = (long)rows * cols;
    for (long i = 0; i < n; i++) keep[i] = in[i] = rng_float(1.0f);
    for (long i = 0; i < n; i++) out[i] = NAN;
    in_kernel = 1;
    transpose(rows, cols, in, out);
    in_kernel = 0;
    if (memcmp(in, keep, n * sizeof *in) != 0) {
        printf("FAIL %s (rows=%d cols=%d): the input was modified\n", label, rows, cols);
        return 1;
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            if (memcmp(&out[(long)j * rows + i], &in[(long)i * cols + j], sizeof(float)) != 0) {
                printf("FAIL %s (rows=%d cols=%d): out[%d][%d] = %g, expected %g\n", label, rows, cols, j, i,
                       out[(long)j * rows + i], in[(long)i * cols + j]);
                return 1;
            }
    return 0;
}

static int check_shape(int rows, int cols, float *in, float *keep, float *out, const char *label) {
    return check_round(rows, cols, in, keep, out, label) || check_round(rows, cols, in, keep, out, label);
}

int main(void) {
    atexit(refuse_early_exit);
    rng_seed_from_env();
    static const int odd[][2] = {{1, 1}, {3, 5}, {17, 33}, {1, 1000}, {1000, 1}, {129, 257}, {7, 300}, {300, 7}};
    struct transpose_case cases[MAX_CASES];
    int ncases = read_workload(workload_path(), cases);
    long max_n = 0;
    for (unsigned s = 0; s < sizeof odd / sizeof odd[0]; s++)
        if ((long)odd[s][0] * odd[s][1] > max_n) max_n = (long)odd[s][0] * odd[s][1];
    for (int c = 0; c < ncases; c++)
        if ((long)cases[c].rows * cases[c].cols > max_n) max_n = (long)cases[c].rows * cases[c].cols;
    float *in = malloc(max_n * sizeof(float)), *keep = malloc(max_n * sizeof(float)), *out = malloc(max_n * sizeof(float));
    if (!in || !keep || !out) { fprintf(stderr, "out of memory\n"); return 2; }
    int failures = 0;
    for (unsigned s = 0; s < sizeof odd / sizeof odd[0]; s++)
        failures += check_shape(odd[s][0], odd[s][1], in, keep, out, "odd shape");
    for (int c = 0; c < ncases; c++)
        failures += check_shape(cases[c].rows, cases[c].cols, in, keep, out, cases[c].name);
    if (failures) { printf("%d shape(s) wrong\n", failures); return 1; }
    printf("ok\n");
    return 0;
}
