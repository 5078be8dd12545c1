"""NKI port of softmax_rows.cu: y = softmax(x, axis=1) for x [R, C] fp32.

Rows go on the partitions, 128 per tile; the last tile is clamped with min() so any R works.
The max is subtracted inside the exp activation (bias = -max) and the row sum comes from the
same instruction's free-axis reduction, so each tile costs one ScalarE pass plus two VectorE ops.
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128  # rows per tile = partitions


@nki.jit
def softmax_rows(x):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)

    for t in range((R + P - 1) // P):
        r0 = t * P
        rows = min(P, R - r0)

        tile = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[0:rows, 0:C], src=x[r0:r0 + rows, 0:C])

        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max[0:rows, 0:1], op=nl.maximum, data=tile[0:rows, 0:C], axis=1,
                           negate=True)

        e = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        row_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=e[0:rows, 0:C], op=nl.exp, data=tile[0:rows, 0:C],
                               bias=neg_max[0:rows, 0:1], reduce_op=nl.add, reduce_res=row_sum[0:rows, 0:1])

        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv[0:rows, 0:1], data=row_sum[0:rows, 0:1])
        out = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=out[0:rows, 0:C], data=e[0:rows, 0:C], op0=nl.multiply,
                           operand0=inv[0:rows, 0:1])

        nisa.dma_copy(dst=y[r0:r0 + rows, 0:C], src=out[0:rows, 0:C])

    return y
