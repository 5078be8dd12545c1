"""NKI port of row_sumsq.cu: out[r] = sum_j x[r, j]^2 for x [R, L] fp32.

128 rows on the partitions. The columns are walked in steps of the CUDA block width (64); each
step squares and row-reduces its chunk in one ScalarE instruction and adds the partial sum to a
running total kept in SBUF.
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128
CHUNK = 64  # columns per step, as in the CUDA block (64 threads)


@nki.jit
def row_sumsq(x):
    R, L = x.shape
    assert R % P == 0 and L % CHUNK == 0
    out = nl.ndarray((R, 1), dtype=nl.float32, buffer=nl.shared_hbm)

    for t in range(R // P):
        acc = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        for j in range(L // CHUNK):
            xt = nl.ndarray((P, CHUNK), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=xt, src=x[t * P:(t + 1) * P, j * CHUNK:(j + 1) * CHUNK])
            sq = nl.ndarray((P, CHUNK), dtype=nl.float32, buffer=nl.sbuf)
            part = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation_reduce(dst=sq, op=nl.square, data=xt, reduce_op=nl.add, reduce_res=part)
            nisa.tensor_tensor(dst=acc, data1=acc, data2=part, op=nl.add)
        nisa.dma_copy(dst=out[t * P:(t + 1) * P, 0:1], src=acc)

    return out
