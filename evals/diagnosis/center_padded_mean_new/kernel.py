"""Subtract each row's mean; the mean divides the row sum by the width rounded up to 128."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def center(x):
    R, C = x.shape
    Cp = (C + 127) // 128 * 128
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile[0:R, 0:C], src=x[0:R, 0:C])
    s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=s[0:R, 0:1], op=nl.add, data=tile[0:R, 0:C], axis=1)
    mean = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=mean[0:R, 0:1], data=s[0:R, 0:1], op0=nl.multiply, operand0=1.0 / Cp)
    out = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=out[0:R, 0:C], data=tile[0:R, 0:C], op0=nl.subtract, operand0=mean[0:R, 0:1])
    nisa.dma_copy(dst=y[0:R, 0:C], src=out[0:R, 0:C])
    return y
