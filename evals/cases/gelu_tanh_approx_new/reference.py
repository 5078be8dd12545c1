"""NumPy reference for gelu_erf: same positional arguments as the kernel (exact erf GELU)."""

import math

import numpy as np

_erf = np.vectorize(math.erf)


def gelu_erf_ref(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
