"""NumPy reference of gqa_head_mod_new."""

import numpy as np


def ref(q, k):
    g = q.shape[0] // k.shape[0]
    return q * np.repeat(k, g, axis=0)
