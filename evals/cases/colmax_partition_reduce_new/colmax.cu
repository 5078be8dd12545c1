// Max pooling over the sequence: out[d] = max_s x[s, d] for a row-major [S, D] fp32 matrix.
// One thread per feature column; each thread walks the rows of its column, so consecutive threads
// read consecutive addresses (coalesced) and no cross-thread reduction is needed.
#include <cfloat>

__global__ void colmax(const float* __restrict__ x, float* __restrict__ out, int S, int D) {
    const int d = blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= D) return;
    float m = -FLT_MAX;
    for (int s = 0; s < S; ++s) m = fmaxf(m, x[(size_t)s * D + d]);
    out[d] = m;
}
