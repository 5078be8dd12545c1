"""NumPy reference for residual_scale: same positional arguments as the kernel."""

import numpy as np


def residual_scale_ref(x, branch, alpha):
    return x + alpha * branch
