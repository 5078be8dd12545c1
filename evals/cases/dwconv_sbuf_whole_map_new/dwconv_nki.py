"""NKI port of dwconv3x3.cu (new `import nki` dialect): depthwise 3x3 convolution, channels on partitions.

The whole padded feature map of 128 channels is copied into SBUF once; each of the nine taps multiplies a
shifted window by the channel's weight into a full-size product tile, which the Vector Engine then adds into a
full-size SBUF accumulator.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def dwconv3x3(x, w):
    C, HP, WP = x.shape  # padded input: H + 2 rows, W + 2 columns
    H, W = HP - 2, WP - 2
    assert C == 128
    out = nl.ndarray((C, H, W), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.ndarray((C, HP, WP), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x[0:C, 0:HP, 0:WP])
    wt = nl.ndarray((C, 9), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=wt, src=w[0:C, 0:9])
    acc = nl.ndarray((C, H, W), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    prod = nl.ndarray((C, H, W), dtype=nl.float32, buffer=nl.sbuf)
    for dy in range(3):
        for dx in range(3):
            nisa.tensor_scalar(dst=prod, data=xt[0:C, dy:dy + H, dx:dx + W], op0=nl.multiply,
                               operand0=wt[0:C, dy * 3 + dx:dy * 3 + dx + 1])
            nisa.tensor_tensor(dst=acc, data1=acc, data2=prod, op=nl.add)
    nisa.dma_copy(dst=out[0:C, 0:H, 0:W], src=acc)
    return out
