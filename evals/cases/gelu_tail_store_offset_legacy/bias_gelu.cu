// y = gelu(x + bias[col]) (tanh approximation) over [rows, cols] fp32; any number of rows.
#include <cuda_runtime.h>

__device__ __forceinline__ float gelu_tanh(float v) {
    const float k = 0.7978845608f;  // sqrt(2 / pi)
    return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

__global__ void bias_gelu(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y,
                          int rows, int cols) {
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows && c < cols) {
        y[(long)r * cols + c] = gelu_tanh(x[(long)r * cols + c] + bias[c]);
    }
}
