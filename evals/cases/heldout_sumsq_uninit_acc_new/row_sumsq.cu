// out[r] = sum_j x[r, j]^2 (the squared L2 norm of each row, e.g. for gradient clipping), fp32.
// One 64-thread block per row: each thread accumulates its strided columns in a register that starts
// at 0, a shared-memory tree combines the 64 partials.
#include <cuda_runtime.h>

#define THREADS 64

__global__ void row_sumsq(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
    __shared__ float part[THREADS];
    const int row = blockIdx.x, tid = threadIdx.x;
    if (row >= rows) return;
    float acc = 0.0f;
    for (int c = tid; c < cols; c += THREADS) {
        const float v = x[(size_t)row * cols + c];
        acc += v * v;
    }
    part[tid] = acc;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) part[tid] += part[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[row] = part[0];
}
