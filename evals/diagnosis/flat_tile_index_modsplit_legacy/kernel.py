"""One flat loop over (row tile, column tile) pairs; the row tile is computed with % instead of //."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def negate(x):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    NC = C // 128
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(128)[None, :]
    for q in nl.affine_range((R // 128) * NC):
        rt = q % NC
        ct = q % NC
        xt = nl.load(x[rt * 128 + i_p, ct * 128 + i_f])
        nl.store(y[rt * 128 + i_p, ct * 128 + i_f], value=nl.negative(xt))
    return y
