"""NKI port of residual_scale.cu: out = x + alpha * branch for [R, D] fp32 tensors.

Rows go on the partitions: full 128-row tiles in the main loop, then one partial tile for the
R % 128 remaining rows. alpha * branch + x is a single VectorE scalar_tensor_tensor per tile.
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def residual_scale(x, branch, alpha):
    R, D = x.shape
    out = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm)
    full = R // P
    rem = R - full * P

    for t in range(full):
        xt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        bt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * P:(t + 1) * P, 0:D])
        nisa.dma_copy(dst=bt, src=branch[t * P:(t + 1) * P, 0:D])
        yt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=yt, data=bt, op0=nl.multiply, operand0=alpha, op1=nl.add, operand1=xt)
        nisa.dma_copy(dst=out[t * P:(t + 1) * P, 0:D], src=yt)

    if rem > 0:
        r0 = R // P  # first row of the partial tile
        xt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        bt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:rem, 0:D], src=x[r0:r0 + rem, 0:D])
        nisa.dma_copy(dst=bt[0:rem, 0:D], src=branch[r0:r0 + rem, 0:D])
        yt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=yt[0:rem, 0:D], data=bt[0:rem, 0:D], op0=nl.multiply, operand0=alpha,
                                  op1=nl.add, operand1=xt[0:rem, 0:D])
        nisa.dma_copy(dst=out[r0:r0 + rem, 0:D], src=yt[0:rem, 0:D])

    return out
