"""NumPy reference of silu_tail_offset_legacy."""

import numpy as np


def ref(x):
    return x / (1.0 + np.exp(-x))
