"""NumPy reference for scale_shift."""


def scale_shift_ref(x, gamma, beta):
    return x * gamma + beta
