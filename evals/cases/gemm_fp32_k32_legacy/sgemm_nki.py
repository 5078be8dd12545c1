"""NKI port of sgemm_tiled.cu (legacy neuronxcc.nki dialect): out = lhsT.T @ rhs, fp32.

lhsT [K, M] is A transposed on the host. The K loop keeps the CUDA kernel's 32-wide tile.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

TILE_K = 32  # the CUDA shared-memory tile


@nki.jit
def sgemm(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    assert M % 128 == 0 and N % 512 == 0 and K % TILE_K == 0
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)

    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                a = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * 128:(m + 1) * 128])
                b = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * 512:(n + 1) * 512])
                acc += nl.matmul(a, b, transpose_x=True)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc))

    return out
