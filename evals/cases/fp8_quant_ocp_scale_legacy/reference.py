"""NumPy reference for quant_fp8: the scaled values, saturated at +-448 like the CUDA conversion (the
comparison tolerance covers fp8 rounding)."""

import numpy as np


def quantize_rows_ref(x, amax):
    return np.clip(x * (448.0 / np.maximum(amax, 1e-12)), -448.0, 448.0)
