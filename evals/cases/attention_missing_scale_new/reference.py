"""NumPy reference for attention_head: same positional arguments as the kernel."""

import numpy as np


def attention_head_ref(qT, kT, v):
    q, k = qT.T.astype(np.float64), kT.T.astype(np.float64)
    s = q @ k.T / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
