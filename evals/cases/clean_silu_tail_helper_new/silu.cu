// SiLU over a [rows, cols] fp32 tensor: y = x * sigmoid(x) = x / (1 + exp(-x)). One thread per element,
// grid-stride; the bound check accepts any size.
#include <cuda_runtime.h>

__global__ void silu(const float* __restrict__ x, float* __restrict__ y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float v = x[i];
        y[i] = v / (1.0f + expf(-v));
    }
}
