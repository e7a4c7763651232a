/* Correctness check: compares softmax_rows() with a double-precision reference on random rows
   (seeded by POLYMORPH_SEED) of odd shapes, of large values (where skipping the maximum
   overflows) and of the workload's shapes, with y pre-filled with NaN and every shape run twice
   on the same buffers with fresh data. Exit 0 only when every element is within tolerance and
   x is unchanged. */
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

/* One round: fresh inputs around `offset`, y filled with NaN, softmax, compare. */
static int check_round(int rows, int cols, float offset, float *x, float *keep, float *y, const char *label) {
    long n = (long)rows * cols;
    for (long i = 0; i < n; i++) keep[i] = x[i] = offset + rng_float(8.0f);
    for (long i = 0; i < n; i++) y[i] = NAN;
    in_kernel = 1;
    softmax_rows(rows, cols, x, y);
    in_kernel = 0;
    if (memcmp(x, keep, n * sizeof *x) != 0) {
        printf("FAIL %s (rows=%d cols=%d): the input was modified\n", label, rows, cols);
        return 1;
    }
    for (int i = 0; i < rows; i++) {
        const float *xr = x + (long)i * cols;
        /* A float sum of `cols` terms drifts with the row's length. */
        double max = xr[0], sum = 0, tol = 2e-5 + 5e-7 * sqrt((double)cols);
        for (int j = 1; j < cols; j++) max = xr[j] > max ? xr[j] : max;
        for (int j = 0; j < cols; j++) sum += exp((double)xr[j] - max);
        for (int j = 0; j < cols; j++) {
            double ref = exp((double)xr[j] - max) / sum, got = y[(long)i * cols + j];
            if (!(fabs(got - ref) <= tol * ref + 1e-12)) {
                printf("FAIL %s (rows=%d cols=%d): y[%d][%d] = %g, expected %g\n", label, rows, cols, i, j, got, ref);
                return 1;
            }
        }
    }
    return 0;
}

static int check_shape(int rows, int cols, float offset, float *x, float *keep, float *y, const char *label) {
    return check_round(rows, cols, offset, x, keep, y, label) || check_round(rows, cols, offset, x, keep, y, label);
}

int main(void) {
    atexit(refuse_early_exit);
    rng_seed_from_env();
    static const int odd[][2] = {{1, 1}, {3, 5}, {17, 33}, {1, 1000}, {7, 3}, {2, 4099}, {5, 31}, {1, 65}};
    struct softmax_case cases[MAX_CASES];
    int ncases = read_workload(workload_path(), cases);
    long max_n = 0;
    for (unsigned s = 0; s < sizeof odd / sizeof odd[0]; s++)
        if ((long)odd[s][0] * odd[s][1] > max_n) max_n = (long)odd[s][0] * odd[s][1];
    for (int c = 0; c < ncases; c++)
        if ((long)cases[c].rows * cases[c].cols > max_n) max_n = (long)cases[c].rows * cases[c].cols;
    float *x = malloc(max_n * sizeof(float)), *keep = malloc(max_n * sizeof(float)), *y = malloc(max_n * sizeof(float));
    if (!x || !keep || !y) { fprintf(stderr, "out of memory\n"); return 2; }
    int failures = 0;
    for (unsigned s = 0; s < sizeof odd / sizeof odd[0]; s++) {
        failures += check_shape(odd[s][0], odd[s][1], 0.0f, x, keep, y, "odd shape");
        failures += check_shape(odd[s][0], odd[s][1], 100.0f, x, keep, y, "large values");
    }
    for (int c = 0; c < ncases; c++)
        failures += check_shape(cases[c].rows, cases[c].cols, 0.0f, x, keep, y, cases[c].name);
    if (failures) { printf("%d shape(s) wrong\n", failures); return 1; }
    printf("ok\n");
    return 0;
}
