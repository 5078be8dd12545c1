"""y = relu(x) over 128-column tiles; the column loop's trip count uses R."""

import nki
import nki.isa as nisa
import nki.language as nl

F = 128


@nki.jit
def relu_cols(x):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for j in range(R // F):
        c0 = j * F
        tile = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[0:R, 0:F], src=x[0:R, c0:c0 + F])
        out = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=out[0:R, 0:F], data=tile[0:R, 0:F], op0=nl.maximum, operand0=0.0)
        nisa.dma_copy(dst=y[0:R, c0:c0 + F], src=out[0:R, 0:F])
    return y
