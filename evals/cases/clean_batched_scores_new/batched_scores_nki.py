"""NKI port of batched_scores.cu: s[b] = SCALE * qT[b].T @ kT[b] for every batch b.

The head dimension (128) is the contraction axis. Per batch, kT[b] ([128, S], S <= 512) is the
moving operand for all query tiles; each 128-query slice of qT[b] is the stationary operand. The
scale is folded into the PSUM -> SBUF evacuation. The port takes bf16 q/k (the port spec says so;
the CUDA kernel reads fp32), with fp32 PSUM accumulation and fp32 scores as in CUDA.
"""

import nki
import nki.isa as nisa
import nki.language as nl

SCALE = 0.08838834764831845  # 1 / sqrt(128): the literal launch_scores passes


@nki.jit
def batched_scores(qT, kT):
    B, D, S = qT.shape
    assert D == 128 and S % 128 == 0 and S <= 512
    s = nl.ndarray((B, S, S), dtype=nl.float32, buffer=nl.shared_hbm)

    for b in range(B):
        k_sb = nl.ndarray((D, S), dtype=kT.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=k_sb, src=kT[b, 0:D, 0:S])
        for i in range(S // 128):
            q_sb = nl.ndarray((D, 128), dtype=qT.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=q_sb, src=qT[b, 0:D, i * 128:(i + 1) * 128])
            ps = nl.ndarray((128, S), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=ps, stationary=q_sb, moving=k_sb)
            sc = nl.ndarray((128, S), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=sc, data=ps, op0=nl.multiply, operand0=SCALE)
            nisa.dma_copy(dst=s[b, i * 128:(i + 1) * 128, 0:S], src=sc)

    return s
