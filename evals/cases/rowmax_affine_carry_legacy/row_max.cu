// out[r] = max_j x[r, j] (e.g. the per-row max used for dynamic quantization scales), fp32.
// One warp per row: lane-strided running max, then a shuffle tree.
#include <cuda_runtime.h>
#include <math.h>

__global__ void row_max(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const int lane = threadIdx.x;
    if (row >= rows) return;
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, x[(size_t)row * cols + c]);
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) out[row] = m;
}
