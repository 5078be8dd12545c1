// C[M, N] = relu(A[M, K] @ B[K, N] + bias[N])  -- fp32 SGEMM with a fused bias + ReLU epilogue.
//
// Classic shared-memory tiling: each 16x16 thread block computes a 64x64 tile of C, each thread a
// 4x4 micro-tile held in registers. A and B tiles of 64x64 are staged through shared memory; the
// K loop advances TILE_K = 64 columns at a time. All loads and the final store are bounds-guarded,
// so any M, N, K work (tails are zero-padded in shared memory).
#include <cuda_runtime.h>

#define TILE_M 64
#define TILE_N 64
#define TILE_K 64
#define THREADS_X 16
#define THREADS_Y 16
#define MICRO_M (TILE_M / THREADS_Y)  // 4
#define MICRO_N (TILE_N / THREADS_X)  // 4

__global__ void sgemm_bias_relu(const float* __restrict__ A, const float* __restrict__ B,
                                const float* __restrict__ bias, float* __restrict__ C,
                                int M, int N, int K) {
    __shared__ float As[TILE_K][TILE_M + 1];  // A tile stored K-major (+1 avoids bank conflicts)
    __shared__ float Bs[TILE_K][TILE_N];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * THREADS_X + tx;
    const int block_row = blockIdx.y * TILE_M;
    const int block_col = blockIdx.x * TILE_N;

    float acc[MICRO_M][MICRO_N];
#pragma unroll
    for (int i = 0; i < MICRO_M; ++i)
#pragma unroll
        for (int j = 0; j < MICRO_N; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += TILE_K) {
        // Cooperative loads: 256 threads move 64x64 floats each for A and B (16 per thread).
        for (int idx = tid; idx < TILE_M * TILE_K; idx += THREADS_X * THREADS_Y) {
            int r = idx / TILE_K, c = idx % TILE_K;
            int gr = block_row + r, gc = k0 + c;
            As[c][r] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : 0.0f;
        }
        for (int idx = tid; idx < TILE_K * TILE_N; idx += THREADS_X * THREADS_Y) {
            int r = idx / TILE_N, c = idx % TILE_N;
            int gr = k0 + r, gc = block_col + c;
            Bs[r][c] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : 0.0f;
        }
        __syncthreads();

#pragma unroll 8
        for (int kk = 0; kk < TILE_K; ++kk) {
            float a_frag[MICRO_M], b_frag[MICRO_N];
#pragma unroll
            for (int i = 0; i < MICRO_M; ++i) a_frag[i] = As[kk][ty * MICRO_M + i];
#pragma unroll
            for (int j = 0; j < MICRO_N; ++j) b_frag[j] = Bs[kk][tx * MICRO_N + j];
#pragma unroll
            for (int i = 0; i < MICRO_M; ++i)
#pragma unroll
                for (int j = 0; j < MICRO_N; ++j) acc[i][j] = fmaf(a_frag[i], b_frag[j], acc[i][j]);
        }
        __syncthreads();
    }

    // Epilogue: bias along N, then ReLU; guarded store for ragged M/N.
#pragma unroll
    for (int i = 0; i < MICRO_M; ++i) {
        int row = block_row + ty * MICRO_M + i;
#pragma unroll
        for (int j = 0; j < MICRO_N; ++j) {
            int col = block_col + tx * MICRO_N + j;
            if (row < M && col < N) {
                float v = acc[i][j] + bias[col];
                C[(size_t)row * N + col] = v > 0.0f ? v : 0.0f;
            }
        }
    }
}

// Host-side launch helper: grid covers C with 64x64 tiles (ceil-div handles the tails).
void launch_sgemm_bias_relu(const float* A, const float* B, const float* bias, float* C, int M, int N, int K,
                            cudaStream_t stream) {
    dim3 block(THREADS_X, THREADS_Y);
    dim3 grid((N + TILE_N - 1) / TILE_N, (M + TILE_M - 1) / TILE_M);
    sgemm_bias_relu<<<grid, block, 0, stream>>>(A, B, bias, C, M, N, K);
}
