"""[T, H*Dh] -> [H, T, Dh]; the column offset of head h is written h * 64."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def split_heads(x, w):
    T, HD = x.shape
    H, Dh = w.shape
    out = nl.ndarray((H, T, Dh), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(Dh)[None, :]
    for h in nl.affine_range(H):
        for t in nl.affine_range(T // 128):
            xt = nl.load(x[t * 128 + i_p, h * 64 + i_f])
            nl.store(out[h, t * 128 + i_p, i_f], value=xt)
    return out
