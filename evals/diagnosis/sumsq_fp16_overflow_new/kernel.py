"""Row sum of squares; the reduction result is kept in an fp16 tile (overflows at large widths)."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def sumsq(x):
    R, C = x.shape
    out = nl.ndarray((R, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    tile = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile[0:R, 0:C], src=x[0:R, 0:C])
    sq = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=sq[0:R, 0:C], data1=tile[0:R, 0:C], data2=tile[0:R, 0:C], op=nl.multiply)
    ss = nl.ndarray((P, 1), dtype=nl.float16, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=ss[0:R, 0:1], op=nl.add, data=sq[0:R, 0:C], axis=1)
    res = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res[0:R, 0:1], src=ss[0:R, 0:1])
    nisa.dma_copy(dst=out[0:R, 0:1], src=res[0:R, 0:1])
    return out
