"""Row sums over K in chunks of 8 columns; the running sum is a bf16 tile."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rowsum(x):
    R, K = x.shape
    out = nl.ndarray((R, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_k = nl.arange(8)[None, :]
    i_0 = nl.arange(1)[None, :]
    for t in nl.affine_range(R // 128):
        acc = nl.zeros((128, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
        for k in nl.sequential_range(K // 8):
            xt = nl.load(x[t * 128 + i_p, k * 8 + i_k])
            acc[...] = nl.add(acc, nl.sum(xt, axis=1, keepdims=True))
        nl.store(out[t * 128 + i_p, i_0], value=nl.copy(acc, dtype=nl.float32))
    return out
