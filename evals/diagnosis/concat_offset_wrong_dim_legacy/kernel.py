"""z = [x | y] along columns; y's columns start at R instead of C."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def concat_cols(x, y):
    R, C = x.shape
    z = nl.ndarray((R, 2 * C), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(C)[None, :]
    for t in nl.affine_range(R // 128):
        a = nl.load(x[t * 128 + i_p, i_f])
        b = nl.load(y[t * 128 + i_p, i_f])
        nl.store(z[t * 128 + i_p, i_f], value=a)
        nl.store(z[t * 128 + i_p, R + i_f], value=b)
    return z
