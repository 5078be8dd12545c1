"""NKI port of bias_gelu.cu: y = gelu_tanh(x + bias), 128 rows per tile, a masked tile for the R % 128 tail.

The bias row is broadcast to all partitions once with a K=1 ones-matmul and kept in SBUF.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def bias_gelu(x, bias):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(C)[None, :]
    i_0 = nl.arange(1)[:, None]
    ones = nl.ones((1, 128), dtype=nl.float32)
    b_row = nl.load(bias[i_0, i_f])
    b_tile = nl.copy(nisa.nc_matmul(ones, b_row), dtype=nl.float32)
    full = R // 128
    for t in nl.affine_range(full):
        xt = nl.load(x[t * 128 + i_p, i_f])
        nl.store(y[t * 128 + i_p, i_f], value=nl.gelu_apprx_tanh(nl.add(xt, b_tile)))
    rem = R - full * 128
    if rem > 0:
        r0 = full * 128
        xt = nl.load(x[r0 + i_p, i_f], mask=(i_p < rem))
        yt = nl.gelu_apprx_tanh(nl.add(xt, b_tile), mask=(i_p < rem))
        nl.store(y[r0 - 128 + i_p, i_f], value=yt, mask=(i_p < rem))
    return y
