"""Stand-in nki.language: just what the neuron-backend tests use."""

import numpy as np

sbuf, psum, hbm, shared_hbm = "sbuf", "psum", "hbm", "shared_hbm"
float32 = np.float32
multiply, add = np.multiply, np.add


def ndarray(shape, dtype, buffer=sbuf, name=""):
    if buffer in (sbuf, psum) and shape[0] > 128:
        raise SyntaxError(f"Size of partition dimension {shape[0]} exceeds architecture limitation of 128. "
                          "[err_num_partition_exceed_arch_limit]")
    return np.full(shape, np.nan, dtype=dtype)
