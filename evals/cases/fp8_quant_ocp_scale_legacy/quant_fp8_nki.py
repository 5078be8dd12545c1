"""NKI port of quant_fp8.cu: per-row fp8 quantisation, 128 rows per tile on the partitions.

amax[R, 1] holds each row's absolute maximum (computed by the caller, as in the CUDA pipeline). The
scale FP8_MAX / amax maps every row onto the full fp8 range.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

FP8_MAX = 448.0


@nki.jit
def quantize_rows(x, amax):
    R, C = x.shape
    assert R % 128 == 0
    q = nl.ndarray((R, C), dtype=nl.float8_e4m3, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(C)[None, :]
    i_0 = nl.arange(1)[None, :]
    for t in nl.affine_range(R // 128):
        xt = nl.load(x[t * 128 + i_p, i_f])
        a = nl.load(amax[t * 128 + i_p, i_0])
        s = nl.multiply(nl.reciprocal(nl.maximum(a, 1e-12)), FP8_MAX)
        qt = nl.multiply(xt, s, dtype=nl.float8_e4m3)
        nl.store(q[t * 128 + i_p, i_f], value=qt)
    return q
