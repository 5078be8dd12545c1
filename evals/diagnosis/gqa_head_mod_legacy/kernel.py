"""Per-head q . k row dots with grouped KV heads; the kv head is taken as h % KV."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def gqa_dots(q, k):
    H, S, D = q.shape
    KV = k.shape[0]
    G = H // KV
    out = nl.ndarray((H, S, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(D)[None, :]
    i_0 = nl.arange(1)[None, :]
    for h in nl.affine_range(H):
        kvh = h % KV
        for t in nl.affine_range(S // 128):
            qt = nl.load(q[h, t * 128 + i_p, i_f])
            kt = nl.load(k[kvh, t * 128 + i_p, i_f])
            d = nl.sum(nl.multiply(qt, kt), axis=1, keepdims=True)
            nl.store(out[h, t * 128 + i_p, i_0], value=d)
    return out
