#define THREADS 128
#define VEC 1
#define WARP_PER_ROW 0
#define CACHE_ROW 0
