"""y = x * x + x with min()-clamped row tiles; the tile's first row is t * C."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def poly(x):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range((R + P - 1) // P):
        r0 = t * C
        rows = min(P, R - r0)
        tile = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[0:rows, 0:C], src=x[r0:r0 + rows, 0:C])
        sq = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=sq[0:rows, 0:C], data1=tile[0:rows, 0:C], data2=tile[0:rows, 0:C], op=nl.multiply)
        out = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out[0:rows, 0:C], data1=sq[0:rows, 0:C], data2=tile[0:rows, 0:C], op=nl.add)
        nisa.dma_copy(dst=y[r0:r0 + rows, 0:C], src=out[0:rows, 0:C])
    return y
