"""NumPy reference for conv1d_stream (batched): same positional arguments as the kernel."""

import numpy as np

KW, HALO = 3, 128


def conv1d_stream_ref(x, w):
    x = np.asarray(x, dtype=np.float32)
    w = np.asarray(w, dtype=np.float32)
    B, C, LX = x.shape
    L = LX - HALO
    CO = w.shape[1] // KW
    y = np.zeros((B, CO, L), dtype=np.float32)
    for t in range(KW):
        start = HALO - (KW - 1) + t
        y += np.einsum("co,bcl->bol", w[:, t * CO:(t + 1) * CO], x[:, :, start:start + L])
    return y
