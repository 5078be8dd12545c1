"""z = x + y tiled 128 rows x 128 columns; the store's row offset uses the column-tile variable."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def add2d(x, y):
    R, C = x.shape
    z = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(128)[None, :]
    for i in nl.affine_range(R // 128):
        for j in nl.affine_range(C // 128):
            a = nl.load(x[i * 128 + i_p, j * 128 + i_f])
            b = nl.load(y[i * 128 + i_p, j * 128 + i_f])
            nl.store(z[j * 128 + i_p, j * 128 + i_f], value=nl.add(a, b))
    return z
