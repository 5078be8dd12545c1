"""NumPy reference of row_start_uses_width_new."""

import numpy as np


def ref(x):
    return x * x + x
