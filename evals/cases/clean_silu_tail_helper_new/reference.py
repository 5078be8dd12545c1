"""NumPy reference for silu: same positional arguments as the kernel."""

import numpy as np


def silu_ref(x):
    x = np.asarray(x, dtype=np.float64)
    return (x / (1.0 + np.exp(-x))).astype(np.float32)
