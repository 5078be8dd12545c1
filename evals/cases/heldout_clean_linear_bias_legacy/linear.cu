// C[M, N] = A[M, K] @ B[K, N] + bias[N]: bf16 weights/activations, fp32 accumulation, fp32 output.
// 32x32 shared-memory tiles, one output element per thread; out-of-range elements are zero-filled.
#include <cuda_bf16.h>

#define TILE 32

__global__ void linear(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                       const float* __restrict__ bias, float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? __bfloat162float(A[(size_t)row * K + k0 + threadIdx.x]) : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (k0 + threadIdx.y < K && col < N) ? __bfloat162float(B[(size_t)(k0 + threadIdx.y) * N + col]) : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc + bias[col];
}
