// y[r, :] = (x[r, :] - mean) * rsqrt(var + eps) * gamma + beta, fp32, two-pass (mean, then centred var).
// One 256-thread block per row; partial sums in fp32 registers, combined by a shared-memory tree.
#include <cuda_runtime.h>

#define THREADS 256

__device__ float block_sum(float v, float* red) {
    const int tid = threadIdx.x;
    red[tid] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        __syncthreads();
    }
    const float total = red[0];
    __syncthreads();
    return total;
}

__global__ void layernorm(const float* __restrict__ x, const float* __restrict__ gamma,
                          const float* __restrict__ beta, float* __restrict__ y, int rows, int dim, float eps) {
    __shared__ float red[THREADS];
    const int row = blockIdx.x, tid = threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * dim;

    float s = 0.0f;
    for (int c = tid; c < dim; c += THREADS) s += xr[c];
    const float mean = block_sum(s, red) / dim;

    float v = 0.0f;
    for (int c = tid; c < dim; c += THREADS) { const float d = xr[c] - mean; v += d * d; }
    const float rstd = rsqrtf(block_sum(v, red) / dim + eps);

    for (int c = tid; c < dim; c += THREADS) y[(size_t)row * dim + c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}
