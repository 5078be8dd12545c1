"""NumPy reference for linear_tiles.cu: lhsT.T @ w + bias accumulated in float64, rounded once."""

import numpy as np


def linear_ref(lhsT, w, bias):
    return (np.asarray(lhsT, np.float64).T @ np.asarray(w, np.float64) + bias).astype(np.float32)
