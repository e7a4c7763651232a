#define BITS 8
#define SMALL 0
#define SKIP 0
#define FUSED 0
