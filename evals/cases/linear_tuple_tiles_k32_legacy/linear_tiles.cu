// C[M, N] = A[M, K] @ W[K, N] + bias[N]: bf16 activations and weights, fp32 accumulation, fp32 output.
// Block tile TM x TN = 128 x 128 with a TK = 32 K step staged through shared memory; 16x16 threads,
// each computing an 8x8 micro-tile. M, N, K are multiples of the tiles (the launcher pads); stores are guarded.
#include <cuda_bf16.h>

#define TM 128
#define TN 128
#define TK 32

__global__ void linear_tiles(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ W,
                             const float* __restrict__ bias, float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TK][TM];
    __shared__ float Ws[TK][TN];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * TM, col0 = blockIdx.x * TN;
    float acc[8][8] = {};
    for (int k0 = 0; k0 < K; k0 += TK) {
        for (int i = ty * 16 + tx; i < TK * TM; i += 256)
            As[i / TM][i % TM] = __bfloat162float(A[(size_t)(row0 + i % TM) * K + k0 + i / TM]);
        for (int i = ty * 16 + tx; i < TK * TN; i += 256)
            Ws[i / TN][i % TN] = __bfloat162float(W[(size_t)(k0 + i / TN) * N + col0 + i % TN]);
        __syncthreads();
        for (int kk = 0; kk < TK; ++kk)
            for (int r = 0; r < 8; ++r)
                for (int c = 0; c < 8; ++c)
                    acc[r][c] += As[kk][ty * 8 + r] * Ws[kk][tx * 8 + c];
        __syncthreads();
    }
    for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 8; ++c) {
            const int row = row0 + ty * 8 + r, col = col0 + tx * 8 + c;
            if (row < M && col < N) C[(size_t)row * N + col] = acc[r][c] + bias[col];
        }
}
