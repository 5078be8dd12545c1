// C[M, N] = A[M, K] @ B[K, N], bf16 inputs, fp32 accumulation, bf16 output.
// Block tile BM x BN = 128 x 64 with a BK = 32 K step staged through shared memory; 16x16 threads,
// each computing an 8x4 micro-tile. M, N, K are multiples of the tiles (the launcher pads); stores are guarded.
#include <cuda_bf16.h>

constexpr int BM = 128, BN = 64, BK = 32;

__global__ void sgemm_tiles(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                            __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[8][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = ty * 16 + tx; i < BK * BM; i += 256)
            As[i / BM][i % BM] = __bfloat162float(A[(size_t)(row0 + i % BM) * K + k0 + i / BM]);
        for (int i = ty * 16 + tx; i < BK * BN; i += 256)
            Bs[i / BN][i % BN] = __bfloat162float(B[(size_t)(k0 + i / BN) * N + col0 + i % BN]);
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk)
            for (int r = 0; r < 8; ++r)
                for (int c = 0; c < 4; ++c)
                    acc[r][c] += As[kk][ty * 8 + r] * Bs[kk][tx * 4 + c];
        __syncthreads();
    }
    for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 4; ++c) {
            const int row = row0 + ty * 8 + r, col = col0 + tx * 4 + c;
            if (row < M && col < N) C[(size_t)row * N + col] = __float2bfloat16(acc[r][c]);
        }
}
