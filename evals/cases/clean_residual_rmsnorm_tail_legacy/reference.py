"""NumPy reference for residual_rmsnorm: same positional arguments as the kernel."""

import numpy as np


def residual_rmsnorm_ref(x, res, gamma):
    h = x + res
    return h / np.sqrt(np.mean(h * h, axis=1, keepdims=True) + 1e-6) * gamma
