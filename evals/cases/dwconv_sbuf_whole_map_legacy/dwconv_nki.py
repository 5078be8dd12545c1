"""NKI port of dwconv3x3.cu (legacy neuronxcc.nki dialect): depthwise 3x3 convolution, channels on partitions.

The CUDA kernel streams each output element from global memory; this port loads the whole padded feature
map of 128 channels into SBUF once and accumulates the nine shifted products into a full-size SBUF tile.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def dwconv3x3(x, w):
    C, HP, WP = x.shape  # padded input: H + 2 rows, W + 2 columns
    H, W = HP - 2, WP - 2
    assert C == 128
    out = nl.ndarray((C, H, W), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x[0:C, 0:HP, 0:WP])
    wt = nl.load(w[0:C, 0:9])
    acc = nl.zeros((C, H, W), dtype=nl.float32, buffer=nl.sbuf)
    for dy in nl.static_range(3):
        for dx in nl.static_range(3):
            acc += nl.multiply(xt[0:C, dy:dy + H, dx:dx + W], wt[0:C, dy * 3 + dx:dy * 3 + dx + 1])
    nl.store(out[0:C, 0:H, 0:W], value=acc)
    return out
