// Batched streaming causal 1-D convolution, bf16 in, fp32 accumulate and out:
//   y[b, co, l] = sum_{ci, t} w[ci, t * cout + co] * x[b, ci, HALO - (KW - 1) + l + t]
// Each sequence carries HALO columns of history in front (the previous chunk's tail, kept 128-aligned);
// only the last KW - 1 are read. One thread per output element; the guard accepts any length.
#include <cuda_bf16.h>

#define KW 3
#define HALO 128

__global__ void conv1d_stream(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                              float* __restrict__ y, int batch, int cin, int cout, int len) {
    const int l = blockIdx.x * blockDim.x + threadIdx.x;
    const int co = blockIdx.y;
    const int b = blockIdx.z;
    if (l >= len || co >= cout || b >= batch) return;
    const int xlen = len + HALO;
    const __nv_bfloat16* xb = x + (size_t)b * cin * xlen;
    float acc = 0.0f;
    for (int t = 0; t < KW; ++t)
        for (int ci = 0; ci < cin; ++ci)
            acc += __bfloat162float(w[(size_t)ci * KW * cout + t * cout + co]) *
                   __bfloat162float(xb[(size_t)ci * xlen + HALO - (KW - 1) + l + t]);
    y[((size_t)b * cout + co) * len + l] = acc;
}
