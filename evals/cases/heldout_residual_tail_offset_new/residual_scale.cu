// out = x + alpha * branch: the scaled residual add of a transformer block, fp32 [rows, cols].
// Grid-stride loop over all elements; the bound check makes any size safe.
#include <cuda_runtime.h>

__global__ void residual_scale(const float* __restrict__ x, const float* __restrict__ branch,
                               float* __restrict__ out, float alpha, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        out[i] = x[i] + alpha * branch[i];
    }
}
