"""NKI port of gemm.cu (legacy neuronxcc.nki dialect): out = lhsT.T @ rhs, bf16 in.

lhsT [K, M] is A transposed on the host. One PSUM accumulator covers a whole 2048-column output
strip so each strip is evacuated and stored once; the matmuls fill it 512 columns at a time.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

TILE_N = 2048  # output columns per PSUM accumulator
MOV = 512      # moving free size per matmul


@nki.jit
def gemm(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    assert M % 128 == 0 and K % 128 == 0 and N % TILE_N == 0
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)

    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.zeros((128, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b = nl.load(rhs[k * 128:(k + 1) * 128, n * TILE_N:(n + 1) * TILE_N])
                for c in nl.affine_range(TILE_N // MOV):
                    acc[:, c * MOV:(c + 1) * MOV] += nl.matmul(a, b[:, c * MOV:(c + 1) * MOV], transpose_x=True)
            nl.store(out[m * 128:(m + 1) * 128, n * TILE_N:(n + 1) * TILE_N], value=nl.copy(acc, dtype=nl.bfloat16))

    return out
