/* FP32 GEMM, parameterised by params.h (see task.toml for what each knob does). */
#include "kernel.h"
#include "params.h"

#if LOOP_ORDER == 0
/* The textbook loop: one dot product per element of C, walking down B's columns. */
void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k++)
                acc += A[i * K + k] * B[k * N + j];
            C[i * N + j] = acc;
        }
}
#elif LOOP_ORDER == 2
/* Register tiles: 4 rows x 16 columns of C accumulate in vector registers over a block of k
   (BLOCK_K, 0 = all of K), reading a 16-column panel of B packed contiguously. ROWS and
   BLOCK_N do not apply. */
#include <stdlib.h>
#include <string.h>

typedef float v8 __attribute__((vector_size(32)));
static inline v8 load8(const float *p) { v8 v; memcpy(&v, p, sizeof v); return v; }
static inline void store8(float *p, v8 v) { memcpy(p, &v, sizeof v); }

/* C[0..4, 0..16] += A[0..4, 0..kb] * panel; A's rows are K apart, C's N apart. */
static void tile4x16(int N, int K, int kb, const float *A, const float *panel, float *C) {
    v8 c00 = load8(C), c01 = load8(C + 8), c10 = load8(C + N), c11 = load8(C + N + 8);
    v8 c20 = load8(C + 2L * N), c21 = load8(C + 2L * N + 8), c30 = load8(C + 3L * N), c31 = load8(C + 3L * N + 8);
    const float *a0 = A, *a1 = A + K, *a2 = A + 2L * K, *a3 = A + 3L * K;
    for (int k = 0; k < kb; k++) {
        v8 b0 = load8(panel + 16L * k), b1 = load8(panel + 16L * k + 8);
        c00 += a0[k] * b0; c01 += a0[k] * b1;
        c10 += a1[k] * b0; c11 += a1[k] * b1;
        c20 += a2[k] * b0; c21 += a2[k] * b1;
        c30 += a3[k] * b0; c31 += a3[k] * b1;
    }
    store8(C, c00); store8(C + 8, c01); store8(C + N, c10); store8(C + N + 8, c11);
    store8(C + 2L * N, c20); store8(C + 2L * N + 8, c21); store8(C + 3L * N, c30); store8(C + 3L * N + 8, c31);
}

void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
    int kblk = BLOCK_K > 0 ? BLOCK_K : K;
    memset(C, 0, (size_t)M * N * sizeof(float));
    float *panel = malloc((size_t)kblk * 16 * sizeof(float));
    if (!panel) abort();
    int j0 = 0;
    for (; j0 + 16 <= N; j0 += 16) {
        for (int k0 = 0; k0 < K; k0 += kblk) {
            int kb = K - k0 < kblk ? K - k0 : kblk;
            for (int k = 0; k < kb; k++) memcpy(panel + 16L * k, B + (long)(k0 + k) * N + j0, 16 * sizeof(float));
            int i = 0;
            for (; i + 4 <= M; i += 4) tile4x16(N, K, kb, A + (long)i * K + k0, panel, C + (long)i * N + j0);
            for (; i < M; i++)
                for (int k = 0; k < kb; k++) {
                    float a = A[(long)i * K + k0 + k];
                    for (int jj = 0; jj < 16; jj++) C[(long)i * N + j0 + jj] += a * panel[16L * k + jj];
                }
        }
    }
    for (int i = 0; i < M && j0 < N; i++)
        for (int k = 0; k < K; k++) {
            float a = A[(long)i * K + k];
            for (int j = j0; j < N; j++) C[(long)i * N + j] += a * B[(long)k * N + j];
        }
    free(panel);
}
#else
#define BK (BLOCK_K > 0 ? BLOCK_K : K)
#define BN (BLOCK_N > 0 ? BLOCK_N : N)
static inline int min_int(int a, int b) { return a < b ? a : b; }

/* i-k-j order: C's row segment is updated with a scaled row of B, ROWS rows at a time so
   that each element of B loaded is used ROWS times. */
void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
    for (int i = 0; i < M * N; i++)
        C[i] = 0.0f;
    for (int j0 = 0; j0 < N; j0 += BN) {
        int j1 = min_int(N, j0 + BN);
        for (int k0 = 0; k0 < K; k0 += BK) {
            int k1 = min_int(K, k0 + BK);
            int i = 0;
            for (; i + ROWS <= M; i += ROWS) {
                float *c = C + (long)i * N;
                for (int k = k0; k < k1; k++) {
                    const float *b = B + (long)k * N;
                    float a[ROWS];
                    for (int r = 0; r < ROWS; r++)
                        a[r] = A[(long)(i + r) * K + k];
                    for (int j = j0; j < j1; j++) {
                        float bj = b[j];
                        for (int r = 0; r < ROWS; r++)
                            c[(long)r * N + j] += a[r] * bj;
                    }
                }
            }
            for (; i < M; i++)
                for (int k = k0; k < k1; k++) {
                    const float *b = B + (long)k * N;
                    float a = A[(long)i * K + k];
                    float *c = C + (long)i * N;
                    for (int j = j0; j < j1; j++)
                        c[j] += a * b[j];
                }
        }
    }
}
#endif
