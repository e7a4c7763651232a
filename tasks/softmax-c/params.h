#define PASSES 3
#define UNROLL 1
#define EXP 0
#define RECIP 0
#define STORE 1
