"""NKI port of gelu.cu: y = gelu(x) for a [R, D] fp32 activation, 128 rows per tile, clamped tail."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def gelu_erf(x):
    R, D = x.shape
    y = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range((R + P - 1) // P):
        r0 = t * P
        rows = min(P, R - r0)
        xt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:rows, 0:D], src=x[r0:r0 + rows, 0:D])
        yt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=yt[0:rows, 0:D], op=nl.gelu_apprx_tanh, data=xt[0:rows, 0:D])
        nisa.dma_copy(dst=y[r0:r0 + rows, 0:D], src=yt[0:rows, 0:D])
    return y
