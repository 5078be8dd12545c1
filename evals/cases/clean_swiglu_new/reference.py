"""NumPy reference for swiglu: same positional arguments as the kernel."""

import numpy as np


def swiglu_ref(gate, up):
    return gate / (1.0 + np.exp(-gate)) * up
