// Column sums of a row-major [R, N] fp32 matrix: out[n] = sum_r A[r, n].
// One block of 128 threads per column (a classic tree reduction in shared memory):
// each thread accumulates a strided slice of the rows, then the block reduces its 128 partials.

#define THREADS 128

__global__ void colsum(const float* __restrict__ A, float* __restrict__ out, int R, int N) {
    __shared__ float part[THREADS];
    const int n = blockIdx.x;
    if (n >= N) return;
    float s = 0.0f;
    for (int r = threadIdx.x; r < R; r += THREADS) s += A[(size_t)r * N + n];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[n] = part[0];
}
