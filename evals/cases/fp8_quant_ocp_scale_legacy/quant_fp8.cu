// Per-row fp8 quantisation for an fp8 GEMM: q = e4m3(x * FP8_MAX / amax[row]), scale_inv[row] = amax / FP8_MAX.
// __nv_fp8_e4m3 is the OCP E4M3 format (largest finite value 448); its constructor saturates.
#include <cuda_fp8.h>

#define FP8_MAX 448.0f
#define COLS_PER_BLOCK 256

__global__ void quantize_rows(const float* __restrict__ x, const float* __restrict__ amax,
                              __nv_fp8_e4m3* __restrict__ q, int rows, int cols) {
    int r = blockIdx.y;
    int c = blockIdx.x * COLS_PER_BLOCK + threadIdx.x;
    if (r < rows && c < cols) {
        float s = FP8_MAX / fmaxf(amax[r], 1e-12f);
        q[(long)r * cols + c] = __nv_fp8_e4m3(x[(long)r * cols + c] * s);
    }
}
