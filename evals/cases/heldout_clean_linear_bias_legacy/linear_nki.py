"""NKI port of linear.cu (legacy neuronxcc.nki dialect): out[M, N] = lhsT.T @ rhs + bias.

bf16 operands, fp32 PSUM accumulation, fp32 output (as in the CUDA kernel). lhsT [K, M] is A
transposed on the host. The bias row is loaded and broadcast to the 128 partitions once; each
128-row output strip keeps its K/128 stationary tiles in SBUF across all column tiles; each
[128, 512] fp32 accumulator is exactly one PSUM bank, and the bias is added while evacuating it.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

TILE_N = 512  # moving free size = one fp32 PSUM bank


@nki.jit
def linear(lhsT, rhs, bias):
    K, M = lhsT.shape
    _, N = rhs.shape
    assert M % 128 == 0 and K % 128 == 0 and N % TILE_N == 0
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    KT = K // 128

    bias_all = nl.broadcast_to(nl.load(bias[0:1, 0:N]), (128, N))

    for m in nl.affine_range(M // 128):
        a_strip = nl.ndarray((KT, nl.par_dim(128), 128), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            a_strip[k] = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])

        for n in nl.affine_range(N // TILE_N):
            acc = nl.zeros((128, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                b = nl.load(rhs[k * 128:(k + 1) * 128, n * TILE_N:(n + 1) * TILE_N])
                acc += nl.matmul(a_strip[k], b, transpose_x=True)
            res = nl.add(acc, bias_all[:, n * TILE_N:(n + 1) * TILE_N], dtype=nl.float32)
            nl.store(out[m * 128:(m + 1) * 128, n * TILE_N:(n + 1) * TILE_N], value=res)

    return out
