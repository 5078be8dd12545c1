"""NumPy reference of head_split_literal_width_legacy."""

import numpy as np


def ref(x, w):
    H, Dh = w.shape
    T = x.shape[0]
    return x.reshape(T, H, Dh).transpose(1, 0, 2).copy()
