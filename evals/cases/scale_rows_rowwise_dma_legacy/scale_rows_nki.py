"""NKI port of scale_rows.cu (legacy neuronxcc.nki dialect): y[r, :] = x[r, :] * s[r].

Mirrors the CUDA grid: one row per iteration, the whole row in the free axis.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def scale_rows(x, s):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)

    for r in nl.affine_range(R):
        row = nl.load(x[r:r + 1, 0:C])
        k = nl.load(s[r:r + 1, 0:1])
        nl.store(y[r:r + 1, 0:C], value=nl.multiply(row, k))

    return y
