"""NKI port of bias_relu.cu: y = relu(x + b[:, None]) on a [C, HW] fp32 feature map.

Channels go on the partitions, 128 per tile; the per-channel bias is the activation's [P, 1] bias
operand, so bias + ReLU is a single ScalarE instruction per tile.
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def bias_relu(x, b):
    C, HW = x.shape
    y = nl.ndarray((C, HW), dtype=x.dtype, buffer=nl.shared_hbm)

    for t in range(C // P):
        xt = nl.ndarray((P, HW), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * P:(t + 1) * P, 0:HW])
        bt = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=bt, src=b[t * P:(t + 1) * P, 0:1])
        yt = nl.ndarray((P, HW), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=yt, op=nl.relu, data=xt, bias=bt)
        nisa.dma_copy(dst=y[t * P:(t + 1) * P, 0:HW], src=yt)

    return y
