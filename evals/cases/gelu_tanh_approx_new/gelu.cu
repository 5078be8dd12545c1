// y = GELU(x) with the exact erf form, 0.5 * x * (1 + erf(x / sqrt(2))), fp32, elementwise.
#include <cuda_runtime.h>

__global__ void gelu_erf(const float* __restrict__ x, float* __restrict__ y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}
