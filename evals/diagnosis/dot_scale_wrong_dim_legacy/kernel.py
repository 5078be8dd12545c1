"""Row dot products q . k scaled by 1/sqrt(D); the scale uses the sequence length S."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

import math


@nki.jit
def scaled_dots(q, k):
    S, D = q.shape
    out = nl.ndarray((S, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(D)[None, :]
    i_0 = nl.arange(1)[None, :]
    scale = 1.0 / math.sqrt(S)
    for t in nl.affine_range(S // 128):
        qt = nl.load(q[t * 128 + i_p, i_f])
        kt = nl.load(k[t * 128 + i_p, i_f])
        d = nl.sum(nl.multiply(qt, kt), axis=1, keepdims=True)
        nl.store(out[t * 128 + i_p, i_0], value=nl.multiply(d, scale))
    return out
