"""NKI port of softmax_logits.cu (legacy neuronxcc.nki dialect): p = softmax(logits, axis=1).

128 rows per tile on the partitions, the whole row in the free axis.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def softmax_logits(logits):
    R, C = logits.shape
    assert R % 128 == 0, "rows must be a multiple of 128"
    p = nl.ndarray((R, C), dtype=logits.dtype, buffer=nl.shared_hbm)

    for t in nl.affine_range(R // 128):
        x = nl.load(logits[t * 128:(t + 1) * 128, 0:C])
        e = nl.exp(x)
        s = nl.sum(e, axis=1, keepdims=True)
        inv = nl.reciprocal(s)
        nl.store(p[t * 128:(t + 1) * 128, 0:C], value=nl.multiply(e, inv))

    return p
