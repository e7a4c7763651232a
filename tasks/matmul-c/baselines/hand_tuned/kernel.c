/* Hand-tuned FP32 GEMM, two paths:
   - wide products (prefill): a register-blocked micro-kernel holds 4 rows x 16 columns of C in
     vector registers across the whole k loop, reading a 16-column panel of B packed contiguously
     once and reused by every block of rows;
   - skinny products (decode): four rows of C updated together from each streamed row of B.
   Written with GCC vector extensions so that it compiles for any target; with -march=native
   each v8 is one AVX register. */
#include "kernel.h"
#include <stdlib.h>
#include <string.h>

typedef float v8 __attribute__((vector_size(32)));

#define MR 4
#define NR 16

static inline v8 load8(const float *p) { v8 v; memcpy(&v, p, sizeof v); return v; }
static inline void store8(float *p, v8 v) { memcpy(p, &v, sizeof v); }

/* C[i..i+rows, j..j+16] = A[i..i+rows, :] * B[:, j..j+16], rows <= MR. */
static inline void micro(int rows, int N, int K, const float *restrict A, const float *restrict B,
                         float *restrict C) {
    v8 acc[MR][2] = {{{0}}};
    for (int k = 0; k < K; k++) {
        v8 b0 = load8(B + (long)k * N), b1 = load8(B + (long)k * N + 8);
        for (int r = 0; r < MR; r++) {
            if (r < rows) {
                float a = A[(long)r * K + k];
                acc[r][0] += a * b0;
                acc[r][1] += a * b1;
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        store8(C + (long)r * N, acc[r][0]);
        store8(C + (long)r * N + 8, acc[r][1]);
    }
}

/* C[i..i+4, j..j+16] = A[i..i+4, :] * panel, where the panel is B's 16 columns packed
   contiguously (row k at panel + 16k), so the k loop streams one cache line per step. */
static void micro_full(int N, int K, const float *restrict A, const float *restrict panel, float *restrict C) {
    v8 a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0}, a20 = {0}, a21 = {0}, a30 = {0}, a31 = {0};
    const float *a0 = A, *a1 = A + K, *a2 = A + 2L * K, *a3 = A + 3L * K;
    for (int k = 0; k < K; k++) {
        v8 b0 = load8(panel + 16L * k), b1 = load8(panel + 16L * k + 8);
        a00 += a0[k] * b0; a01 += a0[k] * b1;
        a10 += a1[k] * b0; a11 += a1[k] * b1;
        a20 += a2[k] * b0; a21 += a2[k] * b1;
        a30 += a3[k] * b0; a31 += a3[k] * b1;
    }
    store8(C, a00); store8(C + 8, a01);
    store8(C + N, a10); store8(C + N + 8, a11);
    store8(C + 2L * N, a20); store8(C + 2L * N + 8, a21);
    store8(C + 3L * N, a30); store8(C + 3L * N + 8, a31);
}

/* Skinny products (decode: a few rows of A): four rows of C are updated together from each
   row of B, so every element of B loaded from memory feeds four FMAs; k is blocked so the four
   rows of C and the panel of B being reused stay in cache. */
#define SKINNY_M 32
#define KB 128
static void skinny_rows4(int N, int K, int k0, int k1, const float *restrict A, const float *restrict B,
                         float *restrict c0, float *restrict c1, float *restrict c2, float *restrict c3) {
    for (int k = k0; k < k1; k++) {
        const float *restrict b = B + (long)k * N;
        float a0 = A[k], a1 = A[K + k], a2 = A[2L * K + k], a3 = A[3L * K + k];
        for (int j = 0; j < N; j++) {
            float bj = b[j];
            c0[j] += a0 * bj;
            c1[j] += a1 * bj;
            c2[j] += a2 * bj;
            c3[j] += a3 * bj;
        }
    }
}

static void skinny_row(int N, int k0, int k1, const float *restrict a, const float *restrict B, float *restrict c) {
    for (int k = k0; k < k1; k++) {
        const float *restrict b = B + (long)k * N;
        float ak = a[k];
        for (int j = 0; j < N; j++) c[j] += ak * b[j];
    }
}

static void skinny(int M, int N, int K, const float *A, const float *B, float *C) {
    memset(C, 0, (size_t)M * N * sizeof(float));
    for (int k0 = 0; k0 < K; k0 += KB) {
        int k1 = k0 + KB < K ? k0 + KB : K;
        int i = 0;
        for (; i + MR <= M; i += MR) {
            float *c = C + (long)i * N;
            skinny_rows4(N, K, k0, k1, A + (long)i * K, B, c, c + N, c + 2L * N, c + 3L * N);
        }
        for (; i < M; i++) skinny_row(N, k0, k1, A + (long)i * K, B, C + (long)i * N);
    }
}

void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
    if (M < SKINNY_M) {
        skinny(M, N, K, A, B, C);
        return;
    }
    float *panel = malloc((size_t)K * NR * sizeof(float));
    if (!panel) abort();
    int j = 0;
    for (; j + NR <= N; j += NR) {
        for (int k = 0; k < K; k++) memcpy(panel + (long)k * NR, B + (long)k * N + j, NR * sizeof(float));
        int i = 0;
        for (; i + MR <= M; i += MR)
            micro_full(N, K, A + (long)i * K, panel, C + (long)i * N + j);
        if (i < M)
            micro(M - i, N, K, A + (long)i * K, B + j, C + (long)i * N + j);
    }
    free(panel);
    if (j < N) { /* leftover columns: i-k-j on the remaining strip */
        for (int i = 0; i < M; i++) {
            float *c = C + (long)i * N;
            for (int jj = j; jj < N; jj++) c[jj] = 0.0f;
            for (int k = 0; k < K; k++) {
                float a = A[(long)i * K + k];
                const float *b = B + (long)k * N;
                for (int jj = j; jj < N; jj++) c[jj] += a * b[jj];
            }
        }
    }
}
