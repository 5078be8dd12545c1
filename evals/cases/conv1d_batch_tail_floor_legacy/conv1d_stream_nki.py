"""NKI port of conv1d_stream.cu (legacy neuronxcc.nki dialect): batched causal 1-D convolution.

y[b, co, l] = sum_{ci, t} w[ci, t * CO + co] * x[b, ci, HALO - (KW - 1) + l + t]. Input channels are
the contraction (partition) axis; each 512-column output tile accumulates its KW taps in one PSUM
bank (tap t: weight slice t times the input window shifted t columns right). Weights are loaded
once for all batches. bf16 operands, fp32 PSUM and output.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KW = 3  # taps
HALO = 128  # history columns in front of each sequence
TILE_L = 512  # output columns per tile: one fp32 PSUM bank


@nki.jit
def conv1d_stream(x, w):
    B, C, LX = x.shape
    _, WC = w.shape
    CO = WC // KW
    L = LX - HALO
    assert C == 128 and CO == 128
    y = nl.ndarray((B, CO, L), dtype=nl.float32, buffer=nl.shared_hbm)

    i_p = nl.arange(128)[:, None]
    i_l = nl.arange(TILE_L)[None, :]
    i_o = nl.arange(CO)[None, :]
    w_sb = nl.load(w[i_p, nl.arange(WC)[None, :]])

    for b in nl.affine_range(B):
        for n in nl.affine_range(L // TILE_L):
            acc = nl.zeros((128, TILE_L), dtype=nl.float32, buffer=nl.psum)
            for t in nl.affine_range(KW):
                xw = nl.load(x[b, i_p, HALO - (KW - 1) + n * TILE_L + t + i_l])
                acc += nl.matmul(w_sb[i_p, t * CO + i_o], xw, transpose_x=True)
            res = nl.copy(acc, dtype=nl.float32)
            nl.store(y[b, i_p, n * TILE_L + i_l], value=res)

    return y
