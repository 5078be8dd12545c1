// Streaming causal 1-D convolution, bf16 in, fp32 accumulate and out:
//   y[co, l] = sum_{ci, t} w[ci, t * cout + co] * x[ci, HALO - (KW - 1) + l + t]
// x holds HALO columns of history in front of the current chunk (the previous chunk's tail, kept
// 128-aligned); only the last KW - 1 of them are read. One thread per output element.
#include <cuda_bf16.h>

#define KW 3
#define HALO 128

__global__ void conv1d_stream(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                              float* __restrict__ y, int cin, int cout, int len) {
    const int l = blockIdx.x * blockDim.x + threadIdx.x;
    const int co = blockIdx.y;
    if (l >= len || co >= cout) return;
    const int xlen = len + HALO;
    float acc = 0.0f;
    for (int t = 0; t < KW; ++t)
        for (int ci = 0; ci < cin; ++ci)
            acc += __bfloat162float(w[(size_t)ci * KW * cout + t * cout + co]) *
                   __bfloat162float(x[(size_t)ci * xlen + HALO - (KW - 1) + l + t]);
    y[(size_t)co * len + l] = acc;
}
