// Fused residual add + RMSNorm, fp32: h = x + res; y = h * rsqrt(mean(h^2) + eps) * gamma.
// One warp per row: lanes stride over the columns, a shuffle tree sums the squares. The host
// launcher passes the model's epsilon (1e-6) as a literal.
#include <cuda_runtime.h>

__global__ void residual_rmsnorm(const float* __restrict__ x, const float* __restrict__ res,
                                 const float* __restrict__ gamma, float* __restrict__ y, int rows, int dim,
                                 float eps) {
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const int lane = threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * dim;
    const float* rr = res + (size_t)row * dim;

    float ss = 0.0f;
    for (int c = lane; c < dim; c += 32) {
        const float h = xr[c] + rr[c];
        ss += h * h;
    }
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
    const float inv = rsqrtf(ss / dim + eps);

    for (int c = lane; c < dim; c += 32) y[(size_t)row * dim + c] = (xr[c] + rr[c]) * inv * gamma[c];
}

void launch_residual_rmsnorm(const float* x, const float* res, const float* gamma, float* y, int rows, int dim,
                             cudaStream_t stream) {
    dim3 block(32, 4);
    residual_rmsnorm<<<(rows + 3) / 4, block, 0, stream>>>(x, res, gamma, y, rows, dim, 1e-6f);
}
