// y = (x - mean) / sqrt(var + eps) * gamma + beta over the last axis, fp32. One block of 128 threads per
// row; each thread runs Welford over its strided columns, then a shared-memory tree merges the
// (count, mean, M2) triples, so the variance never subtracts two large sums.
#include <cuda_runtime.h>

#define THREADS 128

__global__ void layernorm(const float* __restrict__ x, const float* __restrict__ gamma,
                          const float* __restrict__ beta, float* __restrict__ y, int rows, int dim, float eps) {
    __shared__ float s_n[THREADS], s_mean[THREADS], s_m2[THREADS];
    const int row = blockIdx.x, tid = threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * dim;

    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int c = tid; c < dim; c += THREADS) {
        n += 1.0f;
        const float d = xr[c] - mean;
        mean += d / n;
        m2 += d * (xr[c] - mean);
    }
    s_n[tid] = n; s_mean[tid] = mean; s_m2[tid] = m2;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) {
            const float nb = s_n[tid + s], na = s_n[tid], nn = na + nb;
            const float d = s_mean[tid + s] - s_mean[tid];
            if (nn > 0.0f) {
                s_mean[tid] += d * nb / nn;
                s_m2[tid] += s_m2[tid + s] + d * d * na * nb / nn;
                s_n[tid] = nn;
            }
        }
        __syncthreads();
    }
    const float mu = s_mean[0];
    const float rstd = rsqrtf(s_m2[0] / dim + eps);
    for (int c = tid; c < dim; c += THREADS)
        y[(size_t)row * dim + c] = (xr[c] - mu) * rstd * gamma[c] + beta[c];
}
