// y[r, :] = softmax(x[r, :]) over the last axis, fp32. One 256-thread block per row: a shared-memory
// tree finds the row max, a second tree sums exp(x - max), then every thread scales its columns.
// Rows past `rows` and columns past `cols` are skipped, so any shape works.
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256

__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    __shared__ float red[THREADS];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

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
    const float inv = 1.0f / red[0];

    for (int c = tid; c < cols; c += THREADS) yr[c] = expf(xr[c] - row_max) * inv;
}
