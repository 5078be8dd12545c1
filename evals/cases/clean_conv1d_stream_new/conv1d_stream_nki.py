"""NKI port of conv1d_stream.cu: a streaming causal 1-D convolution as KW shifted matmuls.

y[co, l] = sum_{ci, t} w[ci, t * CO + co] * x[ci, HALO - (KW - 1) + l + t]. Input channels are the
contraction (partition) axis. For each 512-column output tile the KW taps accumulate into one PSUM
bank: tap t multiplies the weight slice w[:, t*CO:(t+1)*CO] (loaded once) with the input window that
starts t columns further right. The windows of consecutive taps overlap by TILE_L - 1 columns; that
overlap is the convolution itself. bf16 operands, fp32 PSUM, fp32 output as in the CUDA kernel.
"""

import nki
import nki.isa as nisa
import nki.language as nl

KW = 3  # taps
HALO = 128  # history columns in front of each chunk; the last KW - 1 are read
TILE_L = 512  # output columns per tile: one fp32 PSUM bank


@nki.jit
def conv1d_stream(x, w):
    C, LX = x.shape
    _, WC = w.shape
    CO = WC // KW
    L = LX - HALO
    assert C == 128 and CO == 128 and L % TILE_L == 0
    y = nl.ndarray((CO, L), dtype=nl.float32, buffer=nl.shared_hbm)

    w_sb = nl.ndarray((C, WC), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_sb, src=w[0:C, 0:WC])

    for n in range(L // TILE_L):
        acc = nl.ndarray((CO, TILE_L), dtype=nl.float32, buffer=nl.psum)
        for t in range(KW):
            xw = nl.ndarray((C, TILE_L), dtype=x.dtype, buffer=nl.sbuf)
            start = HALO - (KW - 1) + n * TILE_L + t
            nisa.dma_copy(dst=xw, src=x[0:C, start:start + TILE_L])
            nisa.nc_matmul(dst=acc, stationary=w_sb[0:C, t * CO:(t + 1) * CO], moving=xw)
        res = nl.ndarray((CO, TILE_L), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=y[0:CO, n * TILE_L:(n + 1) * TILE_L], src=res)

    return y
