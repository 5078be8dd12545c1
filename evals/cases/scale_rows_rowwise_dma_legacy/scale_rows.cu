// y[r, :] = x[r, :] * s[r]: per-row scaling (e.g. applying dequantization scales), fp32.
// One block per row, threads stride over the columns.
#include <cuda_runtime.h>

__global__ void scale_rows(const float* __restrict__ x, const float* __restrict__ s, float* __restrict__ y,
                           int rows, int cols) {
    const int r = blockIdx.x;
    if (r >= rows) return;
    const float k = s[r];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[(size_t)r * cols + c] = x[(size_t)r * cols + c] * k;
}
