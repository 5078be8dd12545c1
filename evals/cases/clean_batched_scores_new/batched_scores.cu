// Batched attention scores, fp32: s[b, i, j] = scale * sum_c qT[b, c, i] * kT[b, c, j]. The producer
// stores q and k transposed ([batch, d, seq]). One thread per score; launch_scores passes the softmax
// scale for head dimension 128 (1 / sqrt(128)) as a literal.
#include <cuda_runtime.h>

__global__ void batched_scores(const float* __restrict__ qT, const float* __restrict__ kT, float* __restrict__ s,
                               int batch, int d, int seq, float scale) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y;
    const int b = blockIdx.z;
    if (j >= seq || i >= seq || b >= batch) return;
    const float* q = qT + (size_t)b * d * seq;
    const float* k = kT + (size_t)b * d * seq;
    float acc = 0.0f;
    for (int c = 0; c < d; ++c) acc += q[(size_t)c * seq + i] * k[(size_t)c * seq + j];
    s[((size_t)b * seq + i) * seq + j] = acc * scale;
}

void launch_scores(const float* qT, const float* kT, float* s, int batch, int seq, cudaStream_t stream) {
    dim3 grid((seq + 127) / 128, seq, batch);
    batched_scores<<<grid, 128, 0, stream>>>(qT, kT, s, batch, 128, seq, 0.08838834764831845f);
}
