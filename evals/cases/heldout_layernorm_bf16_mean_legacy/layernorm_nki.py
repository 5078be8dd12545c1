"""NKI port of layernorm.cu (legacy neuronxcc.nki dialect): y = (x - mean) * rsqrt(var + eps) * gamma + beta.

128 rows per tile on the partitions. The row sum for the mean is accumulated chunk by chunk into a
running sum, then the variance is taken two-pass around that mean, as in the CUDA kernel.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

CHUNK = 512


@nki.jit
def layernorm(x, gamma, beta, eps):
    R, D = x.shape
    assert R % 128 == 0 and D % CHUNK == 0
    y = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm)

    for t in nl.affine_range(R // 128):
        g_all = nl.broadcast_to(nl.load(gamma[0:1, 0:D]), (128, D))
        b_all = nl.broadcast_to(nl.load(beta[0:1, 0:D]), (128, D))
        x_t = nl.load(x[t * 128:(t + 1) * 128, 0:D])

        s = nl.zeros((128, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
        for j in nl.sequential_range(D // CHUNK):
            part = nl.sum(x_t[:, j * CHUNK:(j + 1) * CHUNK], axis=1, keepdims=True)
            s = nl.add(s, part, dtype=nl.bfloat16)
        mean = nl.multiply(s, 1.0 / D, dtype=nl.float32)

        xc = nl.subtract(x_t, mean)
        var = nl.mean(nl.square(xc), axis=1, keepdims=True)
        rstd = nl.rsqrt(nl.add(var, eps))
        y_t = nl.add(nl.multiply(nl.multiply(xc, rstd), g_all), b_all)
        nl.store(y[t * 128:(t + 1) * 128, 0:D], value=y_t)

    return y
