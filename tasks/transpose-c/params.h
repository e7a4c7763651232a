#define TILE 0
#define ORDER 0
#define UNROLL 1
#define TILE2 0
