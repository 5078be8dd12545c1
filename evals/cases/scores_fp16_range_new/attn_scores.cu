// Unnormalised attention logits of one head: s[i, j] = (q_i . k_j) * scale, rounded to bfloat16 precision
// (the softmax that follows reads bf16 logits; bf16 keeps the fp32 exponent range, so large logits stay
// finite) and written out as float.
#include <cuda_bf16.h>

#define D 128

__global__ void attn_scores(const float* __restrict__ q, const float* __restrict__ k, float* __restrict__ s,
                            float scale, int n) {
    int i = blockIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && j < n) {
        float acc = 0.0f;
        for (int d = 0; d < D; ++d) acc += q[i * D + d] * k[j * D + d];
        s[(long)i * n + j] = __bfloat162float(__float2bfloat16_rn(acc * scale));
    }
}
