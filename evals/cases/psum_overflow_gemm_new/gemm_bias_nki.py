"""NKI port of gemm_bias.cu: out[M, N] = lhsT.T @ rhs + bias, bf16 in, fp32 accumulate and out.

Wide output tiles (1024 columns) to halve the number of matmuls and stores; bias is broadcast over
the 128 output partitions once per column tile.
"""

import nki
import nki.isa as nisa
import nki.language as nl

TILE_N = 1024


@nki.jit
def gemm_bias(lhsT, rhs, bias):
    K, M = lhsT.shape
    _, N = rhs.shape
    assert M % 128 == 0 and K % 128 == 0 and N % TILE_N == 0
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)

    for n in range(N // TILE_N):
        b_row = nl.ndarray((1, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=b_row, src=bias[0:1, n * TILE_N:(n + 1) * TILE_N])
        b_all = nl.broadcast_to(b_row, (128, TILE_N))
        for m in range(M // 128):
            acc = nl.ndarray((128, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                a = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b = nl.ndarray((128, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, n * TILE_N:(n + 1) * TILE_N])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            res = nl.ndarray((128, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=res, data1=acc, data2=b_all, op=nl.add)
            nisa.dma_copy(dst=out[m * 128:(m + 1) * 128, n * TILE_N:(n + 1) * TILE_N], src=res)

    return out
