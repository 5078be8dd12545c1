"""NumPy reference of heldout_col_trips_from_rows_new."""

import numpy as np


def ref(x):
    return np.maximum(x, 0.0)
