"""Row softmax with a clamped last tile; the last tile's row count is R % P."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def row_softmax(x):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    nt = (R + P - 1) // P
    for t in range(nt):
        r0 = t * P
        rows = P if t < nt - 1 else R % P
        tile = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[0:rows, 0:C], src=x[r0:r0 + rows, 0:C])
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max[0:rows, 0:1], op=nl.maximum, data=tile[0:rows, 0:C], axis=1, negate=True)
        e = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        ssum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=e[0:rows, 0:C], op=nl.exp, data=tile[0:rows, 0:C], bias=neg_max[0:rows, 0:1],
                               reduce_op=nl.add, reduce_res=ssum[0:rows, 0:1])
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv[0:rows, 0:1], data=ssum[0:rows, 0:1])
        out = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=out[0:rows, 0:C], data=e[0:rows, 0:C], op0=nl.multiply, operand0=inv[0:rows, 0:1])
        nisa.dma_copy(dst=y[r0:r0 + rows, 0:C], src=out[0:rows, 0:C])
    return y
