// y[r, c] = max(x[r, c] + b[r], 0): per-channel bias + ReLU on a [channels, pixels] fp32 feature map.
// 2-D grid of 32x8 blocks; the bound check handles any number of channels and pixels.
#include <cuda_runtime.h>

__global__ void bias_relu(const float* __restrict__ x, const float* __restrict__ b, float* __restrict__ y,
                          int channels, int pixels) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < channels && c < pixels) {
        const float v = x[(size_t)r * pixels + c] + b[r];
        y[(size_t)r * pixels + c] = v > 0.0f ? v : 0.0f;
    }
}
