"""NKI port of swiglu.cu: out = silu(gate) * up for [R, D] fp32 tensors.

Rows go on the partitions (128 per tile, last tile clamped with min()); a whole row of D columns is
one DMA of D * 4 bytes per partition. SiLU runs on ScalarE and the product on VectorE.
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def swiglu(gate, up):
    R, D = gate.shape
    out = nl.ndarray((R, D), dtype=gate.dtype, buffer=nl.shared_hbm)

    for t in range((R + P - 1) // P):
        r0 = t * P
        rows = min(P, R - r0)

        g = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        u = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=g[0:rows, 0:D], src=gate[r0:r0 + rows, 0:D])
        nisa.dma_copy(dst=u[0:rows, 0:D], src=up[r0:r0 + rows, 0:D])

        s = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=s[0:rows, 0:D], op=nl.silu, data=g[0:rows, 0:D])
        y = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=y[0:rows, 0:D], data1=s[0:rows, 0:D], data2=u[0:rows, 0:D], op=nl.multiply)

        nisa.dma_copy(dst=out[r0:r0 + rows, 0:D], src=y[0:rows, 0:D])

    return out
