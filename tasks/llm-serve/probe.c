// The machine's probe (harness-owned): how fast this process's cores can read memory and
// multiply 8-bit integers, the two rates a quantized model's tokens are bounded by. bound.mjs
// turns them into bounds on decode, prefill and the trace's goodput.
//
//   probe BYTES   prints {"threads": N, "read_gbps": X, "int8_gmacs": Y, "int8_path": "..."}
//
// BYTES: the weights one decode step reads; a buffer that size (at most 256 MiB, by then past
// any cache) is read by every core this process may run on, the best of several passes. The
// integer rate is the widest multiply-accumulate instruction the compiler may use here
// (-march=native), on every core, in independent chains so that only throughput counts: llama.cpp's
// quantized dot products cannot run faster. Where no such instruction is known (another
// architecture) or the CPU has AMX tiles (which are faster still), int8_gmacs is null: no bound
// on arithmetic is claimed.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define MAX_BUFFER (256UL << 20)
#define PASSES 5
#define CHAINS 12

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

struct job {
    const uint64_t *words;
    size_t n;
    long iters;
    uint64_t out;
};

static void *read_slice(void *arg) {
    struct job *j = arg;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= j->n; i += 4) {
        s0 += j->words[i];
        s1 += j->words[i + 1];
        s2 += j->words[i + 2];
        s3 += j->words[i + 3];
    }
    j->out = s0 ^ s1 ^ s2 ^ s3;
    return NULL;
}

#if defined(__x86_64__) && !defined(__AMX_INT8__) && defined(__AVX512VNNI__)
#define INT8_PATH "avx512vnni"
#define MACS_PER_OP 64
static void *multiply(void *arg) {
    struct job *j = arg;
    __m512i acc[CHAINS];
    const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_epi32(c);
    for (long i = 0; i < j->iters; i++)
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_dpbusd_epi32(acc[c], a, b);
    uint64_t s = 0;
    for (int c = 0; c < CHAINS; c++) s += (uint64_t)_mm512_reduce_add_epi32(acc[c]);
    j->out = s;
    return NULL;
}
#elif defined(__x86_64__) && !defined(__AMX_INT8__) && defined(__AVXVNNI__)
#define INT8_PATH "avxvnni"
#define MACS_PER_OP 32
static void *multiply(void *arg) {
    struct job *j = arg;
    __m256i acc[CHAINS];
    const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(5);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_epi32(c);
    for (long i = 0; i < j->iters; i++)
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_dpbusd_avx_epi32(acc[c], a, b);
    uint64_t s = 0;
    for (int c = 0; c < CHAINS; c++) s += (uint64_t)_mm256_extract_epi32(acc[c], 0);
    j->out = s;
    return NULL;
}
#elif defined(__x86_64__) && !defined(__AMX_INT8__) && defined(__AVX2__)
#define INT8_PATH "avx2"
#define MACS_PER_OP 32
// Each product feeds the next as its unsigned bytes: a chain of multiplies and nothing else.
static void *multiply(void *arg) {
    struct job *j = arg;
    __m256i acc[CHAINS];
    const __m256i b = _mm256_set1_epi8(1);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_epi8((char)(c + 1));
    for (long i = 0; i < j->iters; i++)
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_maddubs_epi16(acc[c], b);
    uint64_t s = 0;
    for (int c = 0; c < CHAINS; c++) s += (uint64_t)_mm256_extract_epi16(acc[c], 0);
    j->out = s;
    return NULL;
}
#else
#define INT8_PATH "none"
#define MACS_PER_OP 0
static void *multiply(void *arg) {
    return arg;
}
#endif

// Seconds for `threads` copies of `fn` over `jobs`, started together and all joined.
static double timed(int threads, void *(*fn)(void *), struct job *jobs) {
    pthread_t t[threads];
    double start = now();
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&t[i], NULL, fn, &jobs[i]) != 0) {
            perror("probe: pthread_create");
            exit(1);
        }
    }
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    return now() - start;
}

int main(int argc, char **argv) {
    char *end = NULL;
    unsigned long long want = argc == 2 ? strtoull(argv[1], &end, 10) : 0;
    if (argc != 2 || *end != '\0' || want == 0) {
        fprintf(stderr, "usage: probe BYTES (the weights one decode step reads)\n");
        return 2;
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        perror("probe: sched_getaffinity");
        return 1;
    }
    int threads = CPU_COUNT(&set);
    size_t bytes = want < MAX_BUFFER ? want : MAX_BUFFER;
    size_t words = bytes / sizeof(uint64_t);
    uint64_t *buf = malloc(words * sizeof(uint64_t));
    if (!buf) {
        fprintf(stderr, "probe: cannot allocate %zu bytes\n", bytes);
        return 1;
    }
    memset(buf, 0x5a, words * sizeof(uint64_t));
    struct job jobs[threads];
    size_t per = words / threads / 4 * 4;
    uint64_t sink = 0;
    double best_read = 1e30;
    for (int p = 0; p < PASSES; p++) {
        for (int i = 0; i < threads; i++) jobs[i] = (struct job){buf + i * per, per, 0, 0};
        double s = timed(threads, read_slice, jobs);
        if (s < best_read) best_read = s;
        for (int i = 0; i < threads; i++) sink ^= jobs[i].out;
    }
    free(buf);
    double read_gbps = (double)per * threads * sizeof(uint64_t) / best_read / 1e9;

    double gmacs = -1;
    if (MACS_PER_OP > 0) {
        // Long enough (20 ms a pass) that starting the threads is noise; the best of three.
        long iters = 1L << 14;
        for (;;) {
            for (int i = 0; i < threads; i++) jobs[i] = (struct job){NULL, 0, iters, 0};
            if (timed(threads, multiply, jobs) >= 0.02 || iters >= (1L << 30)) break;
            iters *= 2;
        }
        double best = 1e30;
        for (int p = 0; p < 3; p++) {
            for (int i = 0; i < threads; i++) jobs[i] = (struct job){NULL, 0, iters, 0};
            double s = timed(threads, multiply, jobs);
            if (s < best) best = s;
            for (int i = 0; i < threads; i++) sink ^= jobs[i].out;
        }
        gmacs = (double)iters * CHAINS * MACS_PER_OP * threads / best / 1e9;
    }
    printf("{\"threads\": %d, \"read_gbps\": %.3f, ", threads, read_gbps);
    if (gmacs > 0)
        printf("\"int8_gmacs\": %.3f, \"int8_path\": \"%s\"", gmacs, INT8_PATH);
    else
        printf("\"int8_gmacs\": null, \"int8_path\": null");
    printf(", \"sink\": %llu}\n", (unsigned long long)(sink & 1));
    return 0;
}
