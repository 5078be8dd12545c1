// y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * gamma, fp32. One warp per row: each lane sums
// squares of a strided slice in fp32, a shuffle tree combines them, lanes then scale their columns.
#include <cuda_runtime.h>

__global__ void rmsnorm(const float* __restrict__ x, const float* __restrict__ gamma, float* __restrict__ y,
                        int rows, int dim, float eps) {
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const int lane = threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * dim;

    float ss = 0.0f;
    for (int c = lane; c < dim; c += 32) ss += xr[c] * xr[c];
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
    const float scale = rsqrtf(ss / dim + eps);

    for (int c = lane; c < dim; c += 32) y[(size_t)row * dim + c] = xr[c] * scale * gamma[c];
}
