"""NumPy reference for bias_gelu (tanh-approximated GELU, like the CUDA kernel)."""

import numpy as np


def bias_gelu_ref(x, bias):
    v = x + bias
    return 0.5 * v * (1.0 + np.tanh(0.7978845608 * (v + 0.044715 * v ** 3)))
