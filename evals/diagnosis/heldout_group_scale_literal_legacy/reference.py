"""NumPy reference of heldout_group_scale_literal_legacy."""

import numpy as np


def ref(x, scales):
    g = x.shape[0] // scales.shape[0]
    return x * np.repeat(scales, g, axis=0)
