"""NumPy reference for softmax_logits: same positional arguments as the kernel."""

import numpy as np


def softmax_logits_ref(logits):
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)
