/* Out-of-place transpose, parameterised by params.h (see task.toml for what each knob does). */
#include "kernel.h"
#include "params.h"

/* out[j][i] = in[i][j] over rows [i0, i1) and columns [j0, j1) of in. */
static void block(int rows, int cols, const float *in, float *out, int i0, int i1, int j0, int j1) {
#if ORDER == 0
    /* UNROLL rows of in at a time: each column j gives UNROLL consecutive floats of out. */
    int i = i0;
    for (; i + UNROLL <= i1; i += UNROLL)
        for (int j = j0; j < j1; j++)
            for (int u = 0; u < UNROLL; u++) out[(long)j * rows + i + u] = in[(long)(i + u) * cols + j];
    for (; i < i1; i++)
        for (int j = j0; j < j1; j++) out[(long)j * rows + i] = in[(long)i * cols + j];
#else
    /* UNROLL columns of in at a time: each row i gives UNROLL consecutive floats of in. */
    int j = j0;
    for (; j + UNROLL <= j1; j += UNROLL)
        for (int i = i0; i < i1; i++)
            for (int u = 0; u < UNROLL; u++) out[(long)(j + u) * rows + i] = in[(long)i * cols + j + u];
    for (; j < j1; j++)
        for (int i = i0; i < i1; i++) out[(long)j * rows + i] = in[(long)i * cols + j];
#endif
}

static inline int min(int a, int b) { return a < b ? a : b; }

/* The tiles of one TILE2 block (or of the whole matrix). */
static void tiles(int rows, int cols, const float *in, float *out, int i0, int i1, int j0, int j1) {
#if TILE == 0
    block(rows, cols, in, out, i0, i1, j0, j1);
#else
    for (int ii = i0; ii < i1; ii += TILE)
        for (int jj = j0; jj < j1; jj += TILE)
            block(rows, cols, in, out, ii, min(ii + TILE, i1), jj, min(jj + TILE, j1));
#endif
}

void transpose(int rows, int cols, const float *in, float *out) {
#if TILE2 == 0
    tiles(rows, cols, in, out, 0, rows, 0, cols);
#else
    for (int ii = 0; ii < rows; ii += TILE2)
        for (int jj = 0; jj < cols; jj += TILE2)
            tiles(rows, cols, in, out, ii, min(ii + TILE2, rows), jj, min(jj + TILE2, cols));
#endif
}
