"""Row sums of x [R, K] over 128-column chunks; the chunk loop's trip count is taken from R."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rowsum(x):
    R, K = x.shape
    out = nl.ndarray((R, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(128)[None, :]
    i_0 = nl.arange(1)[None, :]
    for t in nl.affine_range(R // 128):
        acc = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        for k in nl.sequential_range(R // 128):
            xt = nl.load(x[t * 128 + i_p, k * 128 + i_f])
            acc[...] = nl.add(acc, nl.sum(xt, axis=1, keepdims=True))
        nl.store(out[t * 128 + i_p, i_0], value=acc)
    return out
