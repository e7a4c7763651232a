#define LOOP_ORDER 0
#define ROWS 1
#define BLOCK_K 0
#define BLOCK_N 0
