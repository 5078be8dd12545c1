"""NumPy reference of tile_copy_wrong_loop_var_new."""

import numpy as np


def ref(x):
    return x - 0.5
