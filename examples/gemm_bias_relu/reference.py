"""NumPy reference for the gemm_bias_relu port: same positional arguments as the kernel."""

import numpy as np


def gemm_bias_relu_ref(lhsT, rhs, bias):
    """relu(A @ B + bias) with A = lhsT.T (the host transposes A for the NKI kernel)."""
    return np.maximum(lhsT.T @ rhs + bias, 0.0)
