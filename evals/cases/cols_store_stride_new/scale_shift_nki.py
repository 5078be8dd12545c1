"""NKI port of scale_shift.cu: y = x * gamma + beta with per-channel gamma/beta ([R, 1] columns).

Channels on the partitions (128 per tile), columns in TILE_N-wide blocks; gamma and beta of a channel
tile are loaded once and applied as per-partition scalars by one tensor_scalar per block.
"""

import nki
import nki.isa as nisa
import nki.language as nl

TILE_M = 128
TILE_N = 512


@nki.jit
def scale_shift(x, gamma, beta):
    R, C = x.shape
    assert R % TILE_M == 0 and C % TILE_N == 0
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for m in range(R // TILE_M):
        g = nl.ndarray((TILE_M, 1), dtype=nl.float32, buffer=nl.sbuf)
        b = nl.ndarray((TILE_M, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=g, src=gamma[m * TILE_M:(m + 1) * TILE_M, 0:1])
        nisa.dma_copy(dst=b, src=beta[m * TILE_M:(m + 1) * TILE_M, 0:1])
        for n in range(C // TILE_N):
            t = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N])
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=g, op1=nl.add, operand1=b)
            nisa.dma_copy(dst=y[m * TILE_M:(m + 1) * TILE_M, n * TILE_M:n * TILE_M + TILE_N], src=t)
    return y
