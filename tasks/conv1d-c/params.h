#define LOOP 0
#define UNROLL 1
#define BLOCK_T 0
#define SPECIALIZE 0
