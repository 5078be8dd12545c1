// out = silu(gate) * up, elementwise over [rows, cols] fp32 (the gated MLP activation).
// Grid-stride loop over all elements; the bound check makes any size safe.
#include <cuda_runtime.h>

__global__ void swiglu(const float* __restrict__ gate, const float* __restrict__ up, float* __restrict__ out,
                       long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float g = gate[i];
        const float s = g / (1.0f + expf(-g));
        out[i] = s * up[i];
    }
}
