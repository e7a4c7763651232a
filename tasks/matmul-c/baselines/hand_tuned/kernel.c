/* Hand-tuned FP32 GEMM: a register-blocked micro-kernel (4 rows x 16 columns of C held in
   vector registers across the whole k loop), with the column panel of B reused from cache
   by every block of rows. Written with GCC vector extensions so that it compiles for any
   target; with -march=native each v8 is one AVX register. */
#include "kernel.h"
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

static void micro_full(int N, int K, const float *restrict A, const float *restrict B, float *restrict C) {
    v8 a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0}, a20 = {0}, a21 = {0}, a30 = {0}, a31 = {0};
    const float *a0 = A, *a1 = A + K, *a2 = A + 2L * K, *a3 = A + 3L * K;
    for (int k = 0; k < K; k++) {
        v8 b0 = load8(B + (long)k * N), b1 = load8(B + (long)k * N + 8);
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

/* Skinny products (decode: a few rows of A): B is streamed row by row exactly once per group
   of four rows, and a 512-column strip of those rows of C stays in L1 while k runs. */
#define SKINNY_M 16
#define STRIP 512
static void skinny(int M, int N, int K, const float *restrict A, const float *restrict B, float *restrict C) {
    for (int i = 0; i < M; i += MR) {
        int rows = M - i < MR ? M - i : MR;
        for (int j0 = 0; j0 < N; j0 += STRIP) {
            int j1 = j0 + STRIP < N ? j0 + STRIP : N;
            for (int r = 0; r < rows; r++)
                memset(C + (long)(i + r) * N + j0, 0, (j1 - j0) * sizeof(float));
            for (int k = 0; k < K; k++) {
                const float *b = B + (long)k * N;
                float a[MR] = {0};
                for (int r = 0; r < rows; r++) a[r] = A[(long)(i + r) * K + k];
                float *c0 = C + (long)i * N, *c1 = c0 + N, *c2 = c1 + N, *c3 = c2 + N;
                int j = j0;
                if (rows == MR) {
                    for (; j + 8 <= j1; j += 8) {
                        v8 bv = load8(b + j);
                        store8(c0 + j, load8(c0 + j) + a[0] * bv);
                        store8(c1 + j, load8(c1 + j) + a[1] * bv);
                        store8(c2 + j, load8(c2 + j) + a[2] * bv);
                        store8(c3 + j, load8(c3 + j) + a[3] * bv);
                    }
                }
                for (int r = 0; r < rows; r++) {
                    float *c = C + (long)(i + r) * N;
                    for (int jj = j; jj < j1; jj++) c[jj] += a[r] * b[jj];
                }
            }
        }
    }
}

void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
    if (M < SKINNY_M) {
        skinny(M, N, K, A, B, C);
        return;
    }
    int j = 0;
    for (; j + NR <= N; j += NR) {
        int i = 0;
        for (; i + MR <= M; i += MR)
            micro_full(N, K, A + (long)i * K, B + j, C + (long)i * N + j);
        if (i < M)
            micro(M - i, N, K, A + (long)i * K, B + j, C + (long)i * N + j);
    }
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
