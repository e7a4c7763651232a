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
