"""NKI port of linear_tiles.cu (legacy neuronxcc.nki dialect): out[M, N] = lhsT.T @ w + bias.

bf16 operands, fp32 PSUM accumulation, the fp32 bias added while evacuating PSUM, fp32 output.
lhsT [K, M] is the activations transposed on the host. The tile sizes are the CUDA kernel's block tile.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def linear_tiles(lhsT, w, bias):
    K, M = lhsT.shape
    _, N = w.shape
    TM, TN, TK = 128, 128, 32  # the CUDA block tile and its shared-memory K step
    assert M % TM == 0 and N % TN == 0 and K % TK == 0
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    bias_all = nl.broadcast_to(nl.load(bias[0:1, 0:N]), (TM, N))
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                a = nl.load(lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                b = nl.load(w[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                acc += nl.matmul(a, b, transpose_x=True)
            res = nl.add(acc, bias_all[:, n * TN:(n + 1) * TN], dtype=nl.float32)
            nl.store(out[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], value=res)
    return out
