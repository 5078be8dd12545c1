"""NumPy reference for sgemm_tiles.cu: lhsT.T @ rhs accumulated in float64, rounded once."""

import numpy as np


def sgemm_ref(lhsT, rhs):
    return (np.asarray(lhsT, np.float64).T @ np.asarray(rhs, np.float64)).astype(np.float32)
