"""NumPy reference of heldout_col_floor_clamped_new."""

import numpy as np


def ref(x):
    return 0.5 * x
