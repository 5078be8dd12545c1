"""NumPy reference for attn_scores (fp64; the tolerance covers the bf16 rounding of the CUDA output)."""


def attn_scores_ref(qT, kT, scale):
    return (qT.T @ kT) * scale
