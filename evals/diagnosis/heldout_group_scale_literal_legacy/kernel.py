"""Per-head rows scaled by their KV group's scale; the group of head h is written h // 2."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def group_scale(x, scales):
    H, S, D = x.shape
    KV = scales.shape[0]
    G = H // KV
    out = nl.ndarray((H, S, D), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(D)[None, :]
    i_0 = nl.arange(1)[:, None]
    for h in nl.affine_range(H):
        g = h // 2
        sc = nl.broadcast_to(nl.load(scales[g, i_0, i_f]), (128, D))
        for t in nl.affine_range(S // 128):
            xt = nl.load(x[h, t * 128 + i_p, i_f])
            nl.store(out[h, t * 128 + i_p, i_f], value=nl.multiply(xt, sc))
    return out
