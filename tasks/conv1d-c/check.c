/* Correctness check: compares conv1d() with a double-precision reference on random signals and
   filters (seeded by POLYMORPH_SEED) of odd shapes and of the workload's shapes, with y
   pre-filled with NaN and every shape run twice on the same buffers with fresh data. Exit 0
   only when every element is within tolerance and x and w are unchanged. */
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

struct buffers { float *x, *w, *y, *keep_x, *keep_w; };

static int check_round(int channels, int length, int taps, struct buffers *b, const char *label) {
    long stride = (long)length + taps - 1, nx = channels * stride, nw = (long)channels * taps;
    for (long i = 0; i < nx; i++) b->keep_x[i] = b->x[i] = rng_float(1.0f);
    for (long i = 0; i < nw; i++) b->keep_w[i] = b->w[i] = rng_float(1.0f);
    for (long i = 0; i < (long)channels * length; i++) b->y[i] = NAN;
    in_kernel = 1;
    conv1d(channels, length, taps, b->x, b->w, b->y);
    in_kernel = 0;
    if (memcmp(b->x, b->keep_x, nx * sizeof(float)) || memcmp(b->w, b->keep_w, nw * sizeof(float))) {
        printf("FAIL %s (channels=%d length=%d taps=%d): an input was modified\n", label, channels, length, taps);
        return 1;
    }
    for (int c = 0; c < channels; c++)
        for (int t = 0; t < length; t++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < taps; k++) {
                double p = (double)b->w[(long)c * taps + k] * b->x[c * stride + t + k];
                ref += p;
                mag += fabs(p);
            }
            double got = b->y[(long)c * length + t], tol = 1e-5 * sqrt((double)taps) * mag + 1e-6;
            if (!(fabs(got - ref) <= tol)) {
                printf("FAIL %s (channels=%d length=%d taps=%d): y[%d][%d] = %g, expected %g\n", label, channels,
                       length, taps, c, t, got, ref);
                return 1;
            }
        }
    return 0;
}

static int check_shape(int channels, int length, int taps, struct buffers *b, const char *label) {
    return check_round(channels, length, taps, b, label) || check_round(channels, length, taps, b, label);
}

int main(void) {
    atexit(refuse_early_exit);
    rng_seed_from_env();
    static const int odd[][3] = {{1, 1, 1}, {3, 5, 7}, {2, 100, 3}, {5, 33, 4}, {1, 1000, 65}, {7, 9, 300}, {4, 257, 4}, {1, 3, 1}};
    struct conv_case cases[MAX_CASES];
    int ncases = read_workload(workload_path(), cases);
    long max_x = 0, max_w = 0, max_y = 0;
    for (int s = 0; s < (int)(sizeof odd / sizeof odd[0]) + ncases; s++) {
        int ch = s < 8 ? odd[s][0] : cases[s - 8].channels, len = s < 8 ? odd[s][1] : cases[s - 8].length,
            k = s < 8 ? odd[s][2] : cases[s - 8].taps;
        if ((long)ch * (len + k - 1) > max_x) max_x = (long)ch * (len + k - 1);
        if ((long)ch * k > max_w) max_w = (long)ch * k;
        if ((long)ch * len > max_y) max_y = (long)ch * len;
    }
    struct buffers b = {malloc(max_x * sizeof(float)), malloc(max_w * sizeof(float)), malloc(max_y * sizeof(float)),
                        malloc(max_x * sizeof(float)), malloc(max_w * sizeof(float))};
    if (!b.x || !b.w || !b.y || !b.keep_x || !b.keep_w) { fprintf(stderr, "out of memory\n"); return 2; }
    int failures = 0;
    for (unsigned s = 0; s < sizeof odd / sizeof odd[0]; s++)
        failures += check_shape(odd[s][0], odd[s][1], odd[s][2], &b, "odd shape");
    for (int c = 0; c < ncases; c++)
        failures += check_shape(cases[c].channels, cases[c].length, cases[c].taps, &b, cases[c].name);
    if (failures) { printf("%d shape(s) wrong\n", failures); return 1; }
    printf("ok\n");
    return 0;
}
