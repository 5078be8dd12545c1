// Depthwise 3x3 convolution over a zero-padded feature map: out[c, y, x] = sum_{dy,dx} in[c, y+dy, x+dx] * w[c, 3*dy+dx].
// in is [C, H + 2, W + 2] (padded by the caller), w is [C, 9], out is [C, H, W]; fp32 throughout.
// One thread per output element; blocks of 16x16 outputs, one channel per blockIdx.z.

#define BX 16
#define BY 16

__global__ void dwconv3x3(const float* __restrict__ in, const float* __restrict__ w, float* __restrict__ out,
                          int H, int W) {
    const int c = blockIdx.z;
    const int x = blockIdx.x * BX + threadIdx.x;
    const int y = blockIdx.y * BY + threadIdx.y;
    if (x >= W || y >= H) return;
    const int WP = W + 2;
    const float* src = in + (size_t)c * (H + 2) * WP;
    float acc = 0.0f;
    for (int dy = 0; dy < 3; ++dy)
        for (int dx = 0; dx < 3; ++dx)
            acc += src[(size_t)(y + dy) * WP + x + dx] * w[c * 9 + dy * 3 + dx];
    out[((size_t)c * H + y) * W + x] = acc;
}
