/* LSD radix sort of 32-bit keys, parameterised by params.h (see task.toml for what each knob
   does). */
#include "kernel.h"
#include "params.h"
#include <string.h>

#define RADIX (1u << BITS)
#define PASSES ((32 + BITS - 1) / BITS)

#if SMALL
static void insertion(int n, uint32_t *a) {
    for (int i = 1; i < n; i++) {
        uint32_t v = a[i];
        int j = i - 1;
        while (j >= 0 && a[j] > v) a[j + 1] = a[j], j--;
        a[j + 1] = v;
    }
}
#endif

static inline uint32_t digit(uint32_t key, int pass) {
    return pass * BITS >= 32 ? 0 : (key >> (pass * BITS)) & (RADIX - 1);
}

/* Counts then prefix-sums, in place, into each digit's first slot; returns whether every key
   has the same digit. */
static int offsets(int n, uint32_t *count) {
    uint32_t sum = 0;
    int used = 0;
    for (uint32_t d = 0; d < RADIX; d++) {
        uint32_t c = count[d];
        used += c != 0;
        count[d] = sum;
        sum += c;
    }
    (void)n;
    return used == 1;
}

void sort_u32(int n, uint32_t *keys, uint32_t *scratch) {
#if SMALL
    if (n <= SMALL) {
        insertion(n, keys);
        return;
    }
#endif
    static uint32_t count[PASSES][RADIX];
#if FUSED
    memset(count, 0, sizeof count);
    for (int i = 0; i < n; i++)
        for (int p = 0; p < PASSES; p++) count[p][digit(keys[i], p)]++;
#endif
    uint32_t *src = keys, *dst = scratch;
    for (int p = 0; p < PASSES; p++) {
#if !FUSED
        memset(count[p], 0, sizeof count[p]);
        for (int i = 0; i < n; i++) count[p][digit(src[i], p)]++;
#endif
        int same = offsets(n, count[p]);
#if SKIP
        if (same) continue;
#else
        (void)same;
#endif
        for (int i = 0; i < n; i++) dst[count[p][digit(src[i], p)]++] = src[i];
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != keys) memcpy(keys, src, (size_t)n * sizeof *keys);
}
