"""NumPy reference for gemm: same positional arguments as the kernel."""

import numpy as np


def gemm_ref(lhsT, rhs):
    return lhsT.T.astype(np.float64) @ rhs.astype(np.float64)
