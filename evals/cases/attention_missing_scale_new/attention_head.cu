// One attention head, one query row per block: o[i, :] = softmax(q[i] . K^T / sqrt(d)) @ V.
// q, k, v are bf16 [S, d]; scores, softmax and the output accumulate in fp32. Scores for the row are
// kept in shared memory (S <= 1024), the max and sum are reduced with block-wide shared-memory trees.
#include <cuda_bf16.h>
#include <math.h>

#define MAX_S 1024
#define THREADS 128

__global__ void attention_head(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                               const __nv_bfloat16* __restrict__ v, float* __restrict__ o, int S, int d) {
    __shared__ float sc[MAX_S];
    __shared__ float red[THREADS];
    const int i = blockIdx.x, tid = threadIdx.x;
    if (i >= S) return;
    const float scale = rsqrtf((float)d);

    for (int j = tid; j < S; j += THREADS) {
        float dot = 0.0f;
        for (int c = 0; c < d; ++c)
            dot += __bfloat162float(q[(size_t)i * d + c]) * __bfloat162float(k[(size_t)j * d + c]);
        sc[j] = dot * scale;
    }
    __syncthreads();

    float m = -INFINITY;
    for (int j = tid; j < S; j += THREADS) m = fmaxf(m, sc[j]);
    red[tid] = m;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
        __syncthreads();
    }
    const float row_max = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int j = tid; j < S; j += THREADS) {
        sc[j] = expf(sc[j] - row_max);
        sum += sc[j];
    }
    red[tid] = sum;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        __syncthreads();
    }
    const float inv = 1.0f / red[0];

    for (int c = tid; c < d; c += THREADS) {
        float acc = 0.0f;
        for (int j = 0; j < S; ++j) acc += sc[j] * __bfloat162float(v[(size_t)j * d + c]);
        o[(size_t)i * d + c] = acc * inv;
    }
}
