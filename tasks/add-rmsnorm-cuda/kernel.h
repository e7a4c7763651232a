// Harness-owned: the interface every version of the kernel implements.
// Row by row: h = x + residual in fp32; residual = bf16(h); y = bf16(bf16(h) / sqrt(mean(h^2) + eps) * w),
// the mean taken over fp32 h (as vLLM's fused_add_rms_norm does).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

void add_rmsnorm(const __nv_bfloat16 *x, __nv_bfloat16 *residual, const __nv_bfloat16 *w,
                 __nv_bfloat16 *y, int rows, int hidden, float eps, cudaStream_t stream);
