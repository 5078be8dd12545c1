// out[r] = sum_j x[r, j] for a bf16 activation matrix with long rows (e.g. a loss or norm statistic).
// One 256-thread block per row; every thread accumulates its strided columns in fp32, a shared-memory
// tree combines the partials in fp32, and only the final sum is stored (as fp32).
#include <cuda_bf16.h>

#define THREADS 256

__global__ void row_sum(const __nv_bfloat16* __restrict__ x, float* __restrict__ out, int rows, int cols) {
    __shared__ float part[THREADS];
    const int row = blockIdx.x, tid = threadIdx.x;
    if (row >= rows) return;
    float acc = 0.0f;
    for (int c = tid; c < cols; c += THREADS) acc += __bfloat162float(x[(size_t)row * cols + c]);
    part[tid] = acc;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) part[tid] += part[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[row] = part[0];
}
