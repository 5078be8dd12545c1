"""NKI port of row_logsumexp.cu: lse[r] = max(x[r]) + log(sum(exp(x[r] - max(x[r])))), x [R, C] fp32.

Rows go on the partitions, 128 per tile; the last tile is clamped with min() so any R works. The
negated row max is the bias of the exp, and the same ScalarE instruction reduces the row sum; one
more ScalarE op takes the log, and a VectorE subtract adds the max back (log_sum - (-max)).
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128  # rows per tile = partitions


@nki.jit
def row_logsumexp(x):
    R, C = x.shape
    lse = nl.ndarray((R, 1), dtype=nl.float32, buffer=nl.shared_hbm)

    for t in range((R + P - 1) // P):
        r0 = t * P
        rows = min(P, R - r0)

        xt = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:rows, 0:C], src=x[r0:r0 + rows, 0:C])

        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max[0:rows, 0:1], op=nl.maximum, data=xt[0:rows, 0:C], axis=1,
                           negate=True)

        e = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        sum_e = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=e[0:rows, 0:C], op=nl.exp, data=xt[0:rows, 0:C],
                               bias=neg_max[0:rows, 0:1], reduce_op=nl.add, reduce_res=sum_e[0:rows, 0:1])
        log_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=log_sum[0:rows, 0:1], op=nl.log, data=sum_e[0:rows, 0:1])

        out = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out[0:rows, 0:1], data1=log_sum[0:rows, 0:1], data2=neg_max[0:rows, 0:1],
                           op=nl.subtract)
        nisa.dma_copy(dst=lse[r0:r0 + rows, 0:1], src=out[0:rows, 0:1])

    return lse
