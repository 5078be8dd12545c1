"""NumPy reference for softmax_rows: same positional arguments as the kernel."""

import numpy as np


def softmax_rows_ref(x):
    z = x - x.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)
