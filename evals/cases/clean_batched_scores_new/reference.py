"""NumPy reference for batched_scores: same positional arguments as the kernel."""

import numpy as np


def batched_scores_ref(qT, kT):
    q = np.asarray(qT, dtype=np.float32)
    k = np.asarray(kT, dtype=np.float32)
    return np.einsum("bdi,bdj->bij", q, k) / np.sqrt(np.float32(q.shape[1]))
