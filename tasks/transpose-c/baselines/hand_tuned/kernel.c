/* Hand-tuned out-of-place transpose: 256 x 256 blocks (a block of in and of out stay in L2),
   split into 32 x 32 tiles (in L1), each copied eight rows of in at a time so that every column
   gives eight consecutive floats of out. */
#include "kernel.h"

#define OUTER 256
#define INNER 32
#define ROWS 8

static inline int min(int a, int b) { return a < b ? a : b; }

static void tile(int rows, int cols, const float *restrict in, float *restrict out, int i0, int i1, int j0, int j1) {
    int i = i0;
    for (; i + ROWS <= i1; i += ROWS)
        for (int j = j0; j < j1; j++) {
            float *o = out + (long)j * rows + i;
            const float *p = in + (long)i * cols + j;
            for (int u = 0; u < ROWS; u++) o[u] = p[(long)u * cols];
        }
    for (; i < i1; i++)
        for (int j = j0; j < j1; j++) out[(long)j * rows + i] = in[(long)i * cols + j];
}

void transpose(int rows, int cols, const float *in, float *out) {
    for (int bi = 0; bi < rows; bi += OUTER)
        for (int bj = 0; bj < cols; bj += OUTER)
            for (int ti = bi; ti < min(bi + OUTER, rows); ti += INNER)
                for (int tj = bj; tj < min(bj + OUTER, cols); tj += INNER)
                    tile(rows, cols, in, out, ti, min(ti + INNER, rows), tj, min(tj + INNER, cols));
}
