/* Hand-tuned LSD radix sort of 32-bit keys: insertion sort up to 48 keys; 8-bit digits (four
   passes over 256 counters, cheap to clear) below 16,384 keys and 11-bit digits (three passes)
   above; every digit's counts taken in one read of the keys, and a pass whose digit is the
   same for every key skipped. */
#include "kernel.h"
#include <string.h>

#define SMALL 48
#define LARGE 16384

static void insertion(int n, uint32_t *a) {
    for (int i = 1; i < n; i++) {
        uint32_t v = a[i];
        int j = i - 1;
        while (j >= 0 && a[j] > v) a[j + 1] = a[j], j--;
        a[j + 1] = v;
    }
}

/* One LSD radix sort with `bits`-bit digits; count holds passes x 2^bits counters. */
static void radix(int n, uint32_t *keys, uint32_t *scratch, int bits, uint32_t *count) {
    int passes = (32 + bits - 1) / bits;
    uint32_t radix = 1u << bits, mask = radix - 1;
    memset(count, 0, (size_t)passes * radix * sizeof *count);
    for (int i = 0; i < n; i++) {
        uint32_t k = keys[i];
        for (int p = 0; p < passes; p++) count[p * radix + ((k >> (p * bits)) & mask)]++;
    }
    uint32_t *src = keys, *dst = scratch;
    for (int p = 0; p < passes; p++) {
        uint32_t *c = count + p * radix, sum = 0;
        int used = 0;
        for (uint32_t d = 0; d < radix; d++) {
            uint32_t x = c[d];
            used += x != 0;
            c[d] = sum;
            sum += x;
        }
        if (used == 1) continue;
        int shift = p * bits;
        for (int i = 0; i < n; i++) {
            uint32_t k = src[i];
            dst[c[(k >> shift) & mask]++] = k;
        }
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != keys) memcpy(keys, src, (size_t)n * sizeof *keys);
}

void sort_u32(int n, uint32_t *keys, uint32_t *scratch) {
    static uint32_t count[3 << 11];
    if (n <= SMALL) insertion(n, keys);
    else if (n < LARGE) radix(n, keys, scratch, 8, count);
    else radix(n, keys, scratch, 11, count);
}
