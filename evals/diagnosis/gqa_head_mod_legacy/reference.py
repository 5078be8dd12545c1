"""NumPy reference of gqa_head_mod_legacy."""

import numpy as np


def ref(q, k):
    g = q.shape[0] // k.shape[0]
    kk = np.repeat(k, g, axis=0)
    return (q * kk).sum(axis=2, keepdims=True)
