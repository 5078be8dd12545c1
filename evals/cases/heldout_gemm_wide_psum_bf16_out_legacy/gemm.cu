// C[M, N] = A[M, K] @ B[K, N]: bf16 inputs, fp32 accumulation, fp32 output (logits projection).
// 16x16 thread blocks, one output element per thread, 16-wide K tiles staged through shared memory.
#include <cuda_bf16.h>

#define T 16

__global__ void gemm(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                     float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    const int row = blockIdx.y * T + threadIdx.y;
    const int col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? __bfloat162float(A[(size_t)row * K + k0 + threadIdx.x]) : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (k0 + threadIdx.y < K && col < N) ? __bfloat162float(B[(size_t)(k0 + threadIdx.y) * N + col]) : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < T; ++kk) acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
