"""y = exp(x) with min()-clamped tiles; the tile count is math.floor(R / P)."""

import nki
import nki.isa as nisa
import nki.language as nl

import math

P = 128


@nki.jit
def expo(x):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    nt = math.floor(R / P)
    for t in range(nt):
        r0 = t * P
        rows = min(P, R - r0)
        tile = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[0:rows, 0:C], src=x[r0:r0 + rows, 0:C])
        out = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=out[0:rows, 0:C], op=nl.exp, data=tile[0:rows, 0:C])
        nisa.dma_copy(dst=y[r0:r0 + rows, 0:C], src=out[0:rows, 0:C])
    return y
