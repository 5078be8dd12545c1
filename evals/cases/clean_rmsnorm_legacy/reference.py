"""NumPy reference for rmsnorm: same positional arguments as the kernel."""

import numpy as np


def rmsnorm_ref(x, gamma, eps):
    ms = np.mean(x * x, axis=1, keepdims=True)
    return x / np.sqrt(ms + eps) * gamma
