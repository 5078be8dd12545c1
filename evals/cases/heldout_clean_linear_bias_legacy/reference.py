"""NumPy reference for linear: same positional arguments as the kernel."""

import numpy as np


def linear_ref(lhsT, rhs, bias):
    return lhsT.T.astype(np.float64) @ rhs.astype(np.float64) + bias
