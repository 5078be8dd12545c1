"""The PE array's matmul arithmetic, the same on every host.

Model (nki-facts §1.3): the Tensor Engine contracts over the partition axis, at most 128 partitions
per pass; a pass's products are summed and the sum is rounded once to fp32; passes (and `+=` into
PSUM) accumulate in fp32, in order. So a pass's value is round_fp32(exact dot product), fixed by the
inputs alone and not by a BLAS library, its CPU kernel or its thread count.

How it is computed fast. Products of fp32 values are exact in float64, and the float64 GEMM `r` is
within g = gamma_K * sum|p| of the exact sum x in any summation order and with any kernel (Higham,
Accuracy and Stability of Numerical Algorithms, §3.1).
1. Exact elements: when all products of a column pair are multiples of one 2**q and their sum stays
   below 2**(q + 53), every partial sum is exact and r == x (`_spans`; the usual case for bf16/fp8).
2. Otherwise, where fp32 rounding is constant on [r - e, r + e] with e >= 2g, r rounds to round_fp32(x).
3. The rest (r within e of an fp32 rounding midpoint) is summed again with math.fsum (x rounded once
   to float64), its remainder breaking an fp32 tie: round_fp32(x) again.
So every element is round_fp32(x), whichever step settled it on a host. NaN/Inf results are order-independent (float64 cannot
overflow on fp32 products); NaN comes back as one canonical NaN, -0.0 as +0.0.
"""

from __future__ import annotations

import math

import numpy as np

_U = 2.0 ** -53  # float64 unit roundoff
_SMALL = 2048  # above this many unsettled elements, one GEMM of |s|, |m| bounds them all at once


def _gemm(s64: np.ndarray, m64: np.ndarray) -> np.ndarray:
    return s64.T @ m64  # BLAS: any order, any kernel (tests swap in others)


def pe_matmul(s: np.ndarray, m: np.ndarray, chunk: int = 128) -> np.ndarray:
    """s[K, M].T @ m[K, N] (fp32 values) -> fp32 [M, N]: per `chunk` rows round_fp32(exact dot), summed in fp32."""
    K = s.shape[0]
    if K <= chunk:
        return _chunk(s, m)
    out = _chunk(s[:chunk], m[:chunk])
    for k0 in range(chunk, K, chunk):
        out += _chunk(s[k0:k0 + chunk], m[k0:k0 + chunk])
    return out


def _spans(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of fp32 `a`: an upper bound on log2(max|v| / q), q the lowest set bit of any nonzero v
    (-1000 for an all-zero column, +inf with a non-finite value), and max|v|."""
    u = a.view(np.uint32) & np.uint32(0x7FFFFFFF)  # |v| as bits: ordered like the values
    hi = u.max(axis=0)
    # significand bits in use: 24 less the trailing zero bits every value shares (8 for bf16 values, which
    # the simulator stores as fp32)
    mant = int(np.bitwise_or.reduce(u, axis=None)) & 0x7FFFFF
    p = 24 - ((mant & -mant).bit_length() - 1 if mant else 23)
    u -= np.uint32(1)
    lo = u.min(axis=0) + np.uint32(1)  # smallest nonzero |v| (a zero wrapped to the largest)
    emax = (hi >> 23).astype(np.int64) - 126  # v < 2**emax
    emin = (lo >> 23).astype(np.int64) - 126  # min |v| >= 2**(emin - 1), so its lowest bit >= 2**(emin - p)
    emin[emin == -126] = -149 + p  # subnormals: lowest bit >= 2**-149
    span = (emax - emin + p).astype(np.float64)
    span[hi == 0] = -1000.0
    span[hi >= 0x7F800000] = np.inf
    return span, hi.view(np.float32).astype(np.float64)


def _chunk(s: np.ndarray, m: np.ndarray) -> np.ndarray:
    K, M, N = s.shape[0], s.shape[1], m.shape[1]
    if K == 0 or M == 0 or N == 0:
        return np.zeros((M, N), np.float32)
    s = np.ascontiguousarray(s, np.float32)
    m = np.ascontiguousarray(m, np.float32)
    s64, m64 = s.astype(np.float64), m.astype(np.float64)
    r = _gemm(s64, m64)
    out = r.astype(np.float32)
    (sp_s, mx_s), (sp_m, mx_m) = _spans(s), _spans(m)
    room = 53 - (K - 1).bit_length()  # sum|p| <= K max|p| < 2**(span_s + span_m + log2 K) * q
    if sp_s.max() + sp_m.max() > room:
        _settle(out, r, s64, m64, sp_s, sp_m, mx_s, mx_m, room)
    out += np.float32(0.0)  # -0.0 -> +0.0
    return out


def _settle(out, r, s64, m64, sp_s, sp_m, mx_s, mx_m, room) -> None:
    """Steps 2 and 3 for the elements that step 1 does not cover."""
    with np.errstate(invalid="ignore", over="ignore"):  # Inf/NaN operands: their elements are settled as they are
        _settle_finite(out, r, s64, m64, sp_s, sp_m, mx_s, mx_m, room)


def _settle_finite(out, r, s64, m64, sp_s, sp_m, mx_s, mx_m, room) -> None:
    K = s64.shape[0]
    c = 2.0 * (K + 2) * _U * K  # 2 * gamma_K * K, with margin for the rounding of the bound itself
    finite = bool(np.isfinite(sp_s).all() and np.isfinite(sp_m).all())
    if not finite:
        out[np.isnan(out)] = np.nan  # one NaN bit pattern
    if sp_s.min() + sp_m.min() > room:  # no element is exact: check the whole tile
        e = c * (mx_s[:, None] * mx_m[None, :])  # sum|p| <= K max|s_i| max|m_j|
        ok = ((r - e).astype(np.float32) == (r + e).astype(np.float32)) | ~np.isfinite(r)
        rows, cols = np.nonzero(~ok)
    else:
        rsel = np.nonzero(sp_s + sp_m.max() > room)[0]
        ri, cols = np.nonzero(sp_s[rsel, None] + sp_m[None, :] > room)
        rows = rsel[ri]
        rv, e = r[rows, cols], c * mx_s[rows] * mx_m[cols]
        ok = ((rv - e).astype(np.float32) == (rv + e).astype(np.float32)) | ~np.isfinite(rv)
        rows, cols = rows[~ok], cols[~ok]
    if rows.size == 0:
        return
    rv = r[rows, cols]

    def mag(a):  # |a| with non-finite values as 0 (an element they reach is settled already)
        return np.abs(a) if finite else np.where(np.isfinite(a), np.abs(a), 0.0)

    if rows.size > _SMALL:
        bound = (mag(s64).T @ mag(m64))[rows, cols]
    else:
        bound = np.einsum("ki,ki->i", mag(s64[:, rows]), mag(m64[:, cols]))
    e = (c / K) * bound
    ok = (rv - e).astype(np.float32) == (rv + e).astype(np.float32)
    rows, cols = rows[~ok], cols[~ok]
    if rows.size == 0:
        return
    prods = s64[:, rows] * m64[:, cols]  # exact
    out[rows, cols] = [_round_exact(col) for col in prods.T.tolist()]


def _round_exact(vals: list[float]) -> np.float32:
    """round_fp32 of the exact sum of `vals` (float64 values, all finite)."""
    y = math.fsum(vals)  # the exact sum rounded to float64
    y32 = np.float32(y)
    if float(y32) != y and math.isfinite(float(y32)):
        other = np.nextafter(y32, np.float32(np.inf) if y > float(y32) else np.float32(-np.inf))
        if y == (float(y32) + float(other)) / 2:  # an fp32 tie after the float64 rounding: the remainder decides
            rest = math.fsum(vals + [-y])
            if rest:
                y32 = np.float32(math.nextafter(y, math.inf if rest > 0 else -math.inf))
    return y32
