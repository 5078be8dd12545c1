"""Stand-in nki.isa: dst-first ISA calls, as in NKI 0.2+."""

import numpy as np


def dma_copy(dst, src, **_kw):
    dst[...] = np.asarray(src).astype(dst.dtype)


def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, **_kw):
    r = op0(np.asarray(data, dtype=np.float32), np.float32(operand0))
    if op1 is not None:
        r = op1(r, np.float32(operand1))
    dst[...] = r.astype(dst.dtype)
