"""NumPy reference for gemm_bias: same positional arguments as the kernel."""

import numpy as np


def gemm_bias_ref(lhsT, rhs, bias):
    return lhsT.T.astype(np.float64) @ rhs.astype(np.float64) + bias
