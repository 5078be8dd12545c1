// Row log-sum-exp, fp32: lse[r] = m + log(sum_c exp(x[r, c] - m)) with m = max_c x[r, c].
// One block per row; the max and the sum are block-wide shared-memory tree reductions (two passes).
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256

__global__ void row_logsumexp(const float* __restrict__ x, float* __restrict__ lse, int rows, int cols) {
    __shared__ float red[THREADS];
    const int r = blockIdx.x, tid = threadIdx.x;
    if (r >= rows) return;
    const float* xr = x + (size_t)r * cols;

    float m = -INFINITY;
    for (int c = tid; c < cols; c += THREADS) m = fmaxf(m, xr[c]);
    red[tid] = m;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
        __syncthreads();
    }
    const float row_max = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int c = tid; c < cols; c += THREADS) sum += expf(xr[c] - row_max);
    red[tid] = sum;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        __syncthreads();
    }
    if (tid == 0) lse[r] = row_max + logf(red[0]);
}
