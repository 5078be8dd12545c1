"""NKI port of gemm_bias.cu: out[M, N] = lhsT.T @ rhs + bias (a linear layer), bf16 in, fp32 out.

128-row stationary tiles, 512-column moving tiles (one fp32 PSUM bank), K in steps of 128 with
PSUM accumulation; the result is evacuated to SBUF and stored.
"""

import nki
import nki.isa as nisa
import nki.language as nl

TILE_N = 512


@nki.jit
def gemm_bias(lhsT, rhs, bias):
    K, M = lhsT.shape
    _, N = rhs.shape
    assert M % 128 == 0 and K % 128 == 0 and N % TILE_N == 0
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)

    for m in range(M // 128):
        for n in range(N // TILE_N):
            acc = nl.ndarray((128, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                a = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b = nl.ndarray((128, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, n * TILE_N:(n + 1) * TILE_N])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            res = nl.ndarray((128, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * 128:(m + 1) * 128, n * TILE_N:(n + 1) * TILE_N], src=res)

    return out
