"""y = x * x over 128-column tiles; the store's column start steps 64 per tile."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128
F = 128


@nki.jit
def square(x):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for j in range(C // F):
        c0 = j * F
        tile = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[0:R, 0:F], src=x[0:R, c0:c0 + F])
        out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out[0:R, 0:F], data1=tile[0:R, 0:F], data2=tile[0:R, 0:F], op=nl.multiply)
        nisa.dma_copy(dst=y[0:R, j * 64:j * 64 + F], src=out[0:R, 0:F])
    return y
