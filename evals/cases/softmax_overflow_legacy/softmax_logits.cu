// p[r, :] = softmax(logits[r, :]) for attention-score rows, fp32. One warp per row: lane-strided max,
// shuffle-reduce, then lane-strided sum of exp(x - max), shuffle-reduce, then scale.
#include <cuda_runtime.h>
#include <math.h>

__global__ void softmax_logits(const float* __restrict__ logits, float* __restrict__ p, int rows, int cols) {
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const int lane = threadIdx.x;
    if (row >= rows) return;
    const float* xr = logits + (size_t)row * cols;

    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));

    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += expf(xr[c] - m);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);

    const float inv = 1.0f / s;
    for (int c = lane; c < cols; c += 32) p[(size_t)row * cols + c] = expf(xr[c] - m) * inv;
}
