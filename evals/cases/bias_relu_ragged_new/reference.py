"""NumPy reference for bias_relu: same positional arguments as the kernel."""

import numpy as np


def bias_relu_ref(x, b):
    return np.maximum(x + b, 0.0)
