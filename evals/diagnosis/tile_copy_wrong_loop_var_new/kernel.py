"""y = x - 0.5 tiled 128 x 128; the load's row start uses the column-tile variable."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128
F = 128


@nki.jit
def shift(x):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(R // P):
        for j in range(C // F):
            tile = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile[0:P, 0:F], src=x[j * P:j * P + P, j * F:j * F + F])
            out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=out[0:P, 0:F], data=tile[0:P, 0:F], op0=nl.subtract, operand0=0.5)
            nisa.dma_copy(dst=y[i * P:i * P + P, j * F:j * F + F], src=out[0:P, 0:F])
    return y
