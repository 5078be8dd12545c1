"""SiLU with full tiles in a loop and a masked tail after it; the tail store starts one tile early."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def silu(x):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(C)[None, :]
    full = R // 128
    for t in nl.affine_range(full):
        xt = nl.load(x[t * 128 + i_p, i_f])
        nl.store(y[t * 128 + i_p, i_f], value=nl.silu(xt))
    rem = R - full * 128
    if rem > 0:
        r0 = full * 128
        xt = nl.load(x[r0 + i_p, i_f], mask=(i_p < rem))
        nl.store(y[r0 - 128 + i_p, i_f], value=nl.silu(xt, mask=(i_p < rem)), mask=(i_p < rem))
    return y
