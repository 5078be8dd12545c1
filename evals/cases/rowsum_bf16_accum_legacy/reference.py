"""NumPy reference for row_sum: same positional arguments as the kernel."""

import numpy as np


def row_sum_ref(x):
    return np.sum(x.astype(np.float64), axis=1, keepdims=True)
