"""NKI port of sgemm_tiles.cu (new `import nki` dialect): out = lhsT.T @ rhs, bf16 in, fp32 PSUM, bf16 out.

The CUDA block tile carries over as it is: 128 x 64 output tiles and a 32-row K step.
"""

import nki
import nki.isa as nisa
import nki.language as nl

BM, BN, BK = 128, 64, 32  # the CUDA kernel's block tile


@nki.jit
def sgemm_tiles(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    assert M % BM == 0 and N % BN == 0 and K % BK == 0
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for m in range(M // BM):
        for n in range(N // BN):
            acc = nl.ndarray((BM, BN), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // BK):
                a = nl.ndarray((BK, BM), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * BK:(k + 1) * BK, m * BM:(m + 1) * BM])
                b = nl.ndarray((BK, BN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=b, src=rhs[k * BK:(k + 1) * BK, n * BN:(n + 1) * BN])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            res = nl.ndarray((BM, BN), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * BM:(m + 1) * BM, n * BN:(n + 1) * BN], src=res)
    return out
