"""Row sums over K in chunks of 16 columns; the running sum is a bf16 SBUF tile."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128
KC = 16


@nki.jit
def rowsum(x):
    R, K = x.shape
    out = nl.ndarray((R, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((P, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.memset(dst=acc[0:R, 0:1], value=0.0)
    for k in range(K // KC):
        tile = nl.ndarray((P, KC), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[0:R, 0:KC], src=x[0:R, k * KC:k * KC + KC])
        part = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=part[0:R, 0:1], op=nl.add, data=tile[0:R, 0:KC], axis=1)
        nisa.tensor_tensor(dst=acc[0:R, 0:1], data1=acc[0:R, 0:1], data2=part[0:R, 0:1], op=nl.add)
    res = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res[0:R, 0:1], src=acc[0:R, 0:1])
    nisa.dma_copy(dst=out[0:R, 0:1], src=res[0:R, 0:1])
    return out
