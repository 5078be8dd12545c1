"""NumPy reference of concat_offset_wrong_dim_legacy."""

import numpy as np


def ref(x, y):
    return np.concatenate([x, y], axis=1)
