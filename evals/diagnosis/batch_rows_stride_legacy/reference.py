"""NumPy reference of batch_rows_stride_legacy."""

import numpy as np


def ref(x, w):
    return 0.5 * x
