"""NKI port of rmsnorm.cu (legacy neuronxcc.nki dialect): y = x * rsqrt(mean(x^2) + eps) * gamma.

128 rows per tile on the partitions; the last tile is masked (mask=) so any row count works.
gamma is loaded and broadcast to all partitions once, outside the row loop. All math is fp32.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rmsnorm(x, gamma, eps):
    R, D = x.shape
    y = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm)

    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(D)[None, :]
    i_g = nl.arange(1)[:, None]

    g_row = nl.load(gamma[i_g, i_f])
    g_all = nl.broadcast_to(g_row, (128, D))

    for t in nl.affine_range((R + 127) // 128):
        valid = t * 128 + i_p < R
        x_t = nl.load(x[t * 128 + i_p, i_f], mask=valid)
        sq = nl.square(x_t, mask=valid)
        ss = nl.sum(sq, axis=1, keepdims=True, mask=valid)
        ms = nl.multiply(ss, 1.0 / D, mask=valid)
        inv = nl.rsqrt(nl.add(ms, eps, mask=valid), mask=valid)
        normed = nl.multiply(x_t, inv, mask=valid)
        y_t = nl.multiply(normed, g_all, mask=valid)
        nl.store(y[t * 128 + i_p, i_f], value=y_t, mask=valid)

    return y
