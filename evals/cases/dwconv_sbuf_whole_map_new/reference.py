"""NumPy reference for dwconv3x3.cu: depthwise 3x3 convolution of a padded [C, H + 2, W + 2] map."""

import numpy as np


def dwconv3x3_ref(x, w):
    C, HP, WP = x.shape
    H, W = HP - 2, WP - 2
    x64, w64 = np.asarray(x, np.float64), np.asarray(w, np.float64)
    out = np.zeros((C, H, W))
    for dy in range(3):
        for dx in range(3):
            out += x64[:, dy:dy + H, dx:dx + W] * w64[:, dy * 3 + dx][:, None, None]
    return out.astype(np.float32)
