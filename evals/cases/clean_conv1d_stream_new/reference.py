"""NumPy reference for conv1d_stream: same positional arguments as the kernel."""

import numpy as np

KW, HALO = 3, 128


def conv1d_stream_ref(x, w):
    x = np.asarray(x, dtype=np.float32)
    w = np.asarray(w, dtype=np.float32)
    C, LX = x.shape
    L = LX - HALO
    CO = w.shape[1] // KW
    y = np.zeros((CO, L), dtype=np.float32)
    for t in range(KW):
        start = HALO - (KW - 1) + t
        y += w[:, t * CO:(t + 1) * CO].T @ x[:, start:start + L]
    return y
