"""Row softmax, 128 rows per tile; the exp takes no max (inputs are small), the store steps 64 rows per tile."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def row_softmax(x):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(C)[None, :]
    for t in nl.affine_range(R // 128):
        xt = nl.load(x[t * 128 + i_p, i_f])
        e = nl.exp(xt)
        s = nl.sum(e, axis=1, keepdims=True)
        yt = nl.multiply(e, nl.reciprocal(s))
        nl.store(y[t * 64 + i_p, i_f], value=yt)
    return y
