/* Harness-owned helpers shared by check.c and bench.c: seeded random numbers, the workload
   file reader and a monotonic clock. */
#ifndef HARNESS_H
#define HARNESS_H
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng_state;

static inline void rng_seed_from_env(void) {
    const char *s = getenv("POLYMORPH_SEED");
    rng_state = s ? strtoull(s, NULL, 10) : 42;
    rng_state ^= 0x9E3779B97F4A7C15ull;
    if (rng_state == 0) rng_state = 1;
}

static inline uint64_t rng_next(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

/* Uniform in [-scale, scale). */
static inline float rng_float(float scale) {
    return scale * (float)((rng_next() >> 40) * (2.0 / 16777216.0) - 1.0);
}

static inline double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define MAX_CASES 64
struct transpose_case { char name[64]; int rows, cols; };

/* Reads {"cases": [{"name": "...", "rows": 2048, "cols": 2048}, ...]}; returns the count. */
static inline int read_workload(const char *path, struct transpose_case *cases) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open workload %s\n", path); exit(2); }
    static char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    int count = 0;
    char *p = strstr(buf, "\"cases\"");
    while (p && (p = strchr(p, '{')) && count < MAX_CASES) {
        char *end = strchr(p, '}');
        if (!end) break;
        *end = 0;
        struct transpose_case *c = &cases[count];
        memset(c, 0, sizeof *c);
        char *q;
        if ((q = strstr(p, "\"name\"")) && (q = strchr(q + 6, '"'))) sscanf(q + 1, "%63[^\"]", c->name);
        if ((q = strstr(p, "\"rows\""))) sscanf(strchr(q + 6, ':') + 1, "%d", &c->rows);
        if ((q = strstr(p, "\"cols\""))) sscanf(strchr(q + 6, ':') + 1, "%d", &c->cols);
        if (c->rows <= 0 || c->cols <= 0) { fprintf(stderr, "bad case in %s\n", path); exit(2); }
        if (!c->name[0]) snprintf(c->name, sizeof c->name, "r%d_c%d", c->rows, c->cols);
        count++;
        p = end + 1;
    }
    if (count == 0) { fprintf(stderr, "no cases in %s\n", path); exit(2); }
    return count;
}

static inline const char *workload_path(void) {
    const char *w = getenv("POLYMORPH_WORKLOAD");
    return w && *w ? w : "workloads/layouts.json";
}
/* The bench's guard. Before each timed call the bench draws fresh inputs, and after it returns
   the outputs it compares with a reference, from a state seeded by getrandom(2) once the call has
   returned: the kernel can neither predict nor replay them, so one that does less work when it
   is timed (however it tells: /proc, a call count, the shapes) fails the bench itself. */
#include <sys/random.h>
#include <sys/types.h>

/* Outputs of every timed call compared with the reference. */
#define VERIFIED_PER_CALL 16

static inline void rng_seed_unpredictable(void) {
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s) { fprintf(stderr, "getrandom failed\n"); exit(2); }
    rng_state = s ? s : 1;
}

/* Uniform below n (n > 0). */
static inline long rng_below(long n) { return (long)(rng_next() % (uint64_t)n); }
#endif
