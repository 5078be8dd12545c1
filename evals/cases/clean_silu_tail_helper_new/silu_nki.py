"""NKI port of silu.cu: y = x * sigmoid(x) for an [R, D] fp32 tensor, rows on the partitions.

One helper processes a block of `rows` rows starting at row `r0` (load, one ScalarE SiLU, store). The
kernel calls it for every full 128-row tile and once more for the R % 128 leftover rows, so any R works
without masks.
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


def _silu_rows(x, y, r0, rows, D):
    xt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt[0:rows, 0:D], src=x[r0:r0 + rows, 0:D])
    yt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=yt[0:rows, 0:D], op=nl.silu, data=xt[0:rows, 0:D])
    nisa.dma_copy(dst=y[r0:r0 + rows, 0:D], src=yt[0:rows, 0:D])


@nki.jit
def silu(x):
    R, D = x.shape
    y = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(R // P):
        _silu_rows(x, y, t * P, P, D)
    if R % P:
        _silu_rows(x, y, R - R % P, R % P, D)
    return y
