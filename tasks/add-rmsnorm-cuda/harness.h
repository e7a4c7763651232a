// Harness-owned helpers shared by check.cu and bench.cu: error checks, the workload's shapes,
// bf16 on the host, and a seeded generator.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_CHECK(call)                                                              \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "FAIL: %s: %s (%s:%d)\n", #call, cudaGetErrorString(err_), \
                    __FILE__, __LINE__);                                              \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define EPS 1e-6f
#define MAX_SHAPES 8

// The integers of the JSON array named `key` in `text` (a flat workload file).
static int json_ints(const char *text, const char *key, int *out, int max) {
    const char *p = strstr(text, key);
    if (!p || !(p = strchr(p, '['))) return 0;
    int n = 0;
    for (p++; *p && *p != ']' && n < max;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        out[n++] = (int)v;
        p = end;
    }
    return n;
}

// Reads POLYMORPH_WORKLOAD: its token counts and hidden sizes.
static void workload(int *tokens, int *nt, int *hidden, int *nh) {
    const char *path = getenv("POLYMORPH_WORKLOAD");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) {
        fprintf(stderr, "FAIL: cannot read the workload (POLYMORPH_WORKLOAD=%s)\n", path ? path : "");
        exit(1);
    }
    static char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    *nt = json_ints(text, "\"tokens\"", tokens, MAX_SHAPES);
    *nh = json_ints(text, "\"hidden\"", hidden, MAX_SHAPES);
    if (*nt == 0 || *nh == 0) {
        fprintf(stderr, "FAIL: the workload names no tokens or hidden sizes\n");
        exit(1);
    }
}

static uint64_t rng_state;
static void seed_rng(void) {
    const char *s = getenv("POLYMORPH_SEED");
    rng_state = (s ? strtoull(s, NULL, 10) : 1) * 0x9E3779B97F4A7C15ull + 1;
}
// Uniform in [-1, 1).
static float rnd(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (float)((rng_state * 0x2545F4914F6CDD1Dull) >> 40) / (float)(1 << 23) - 1.0f;
}

static void fill(__nv_bfloat16 *h, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) h[i] = __float2bfloat16(rnd() * scale);
}
