"""NumPy reference for row_sumsq: same positional arguments as the kernel."""

import numpy as np


def row_sumsq_ref(x):
    x = x.astype(np.float64)
    return np.sum(x * x, axis=1, keepdims=True)
