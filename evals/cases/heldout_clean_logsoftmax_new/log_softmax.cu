// y[r, :] = log_softmax(x[r, :]) = x - max - log(sum(exp(x - max))), fp32 (e.g. token log-probs).
// One 256-thread block per row: a shared-memory tree finds the max, a second tree sums exp(x - max).
// Rows past `rows` and columns past `cols` are skipped, so any shape works.
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256

__global__ void log_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    __shared__ float red[THREADS];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;

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
    const float lse = row_max + logf(red[0]);

    for (int c = tid; c < cols; c += THREADS) y[(size_t)row * cols + c] = xr[c] - lse;
}
