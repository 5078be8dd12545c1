"""NKI port of attn_scores.cu: s = (q @ k.T) * scale for one head, D = 128 on the contraction axis.

qT [D, N] and kT [D, N] arrive transposed (head dim on the partitions) and are loaded once. Each
[128, 512] score block is accumulated in PSUM, scaled on ScalarE into a 16-bit SBUF tile and stored.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def attn_scores(qT, kT, scale):
    D, N = qT.shape
    assert D == 128 and N % 512 == 0
    s = nl.ndarray((N, N), dtype=nl.float32, buffer=nl.shared_hbm)
    q_all = nl.ndarray((D, N), dtype=nl.bfloat16, buffer=nl.sbuf)
    k_all = nl.ndarray((D, N), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=q_all, src=qT)
    nisa.dma_copy(dst=k_all, src=kT)
    for i in range(N // 128):
        for j in range(N // 512):
            ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=ps, stationary=q_all[0:D, i * 128:(i + 1) * 128],
                           moving=k_all[0:D, j * 512:(j + 1) * 512])
            st = nl.ndarray((128, 512), dtype=nl.float16, buffer=nl.sbuf)
            nisa.activation(dst=st, op=nl.copy, data=ps, scale=scale)
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=st)
            nisa.dma_copy(dst=s[i * 128:(i + 1) * 128, j * 512:(j + 1) * 512], src=out)
    return s
