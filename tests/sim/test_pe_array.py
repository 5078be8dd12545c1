"""The PE array's matmul (sim/pe_array.py) gives round_fp32(exact dot) per 128-row pass, whatever the GEMM."""

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from nki_assist.sim import pe_array


def _round32(x: Fraction) -> np.float32:
    """The fp32 nearest to the rational x, ties to even (finite x)."""
    f = np.float32(float(x))
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    return min(cands, key=lambda c: (abs(Fraction(float(c)) - x), int(np.array(c).view(np.uint32)) & 1))


def _exact(s, m):
    """round_fp32 of the exact dot products (Fraction arithmetic)."""
    out = np.empty((s.shape[1], m.shape[1]), np.float32)
    for i in range(s.shape[1]):
        for j in range(m.shape[1]):
            out[i, j] = _round32(sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(s[:, i], m[:, j])))
    return out


def _orders():
    """GEMMs that sum the same exact products in other orders / precisions, as other BLAS kernels do."""
    def reversed_k(s, m):
        return s[::-1].T.copy() @ m[::-1].copy()

    def sequential(s, m):
        acc = np.zeros((s.shape[1], m.shape[1]))
        for k in range(s.shape[0]):
            acc += s[k][:, None] * m[k][None, :]
        return acc

    def pairwise(s, m):
        prods = s[:, :, None] * m[:, None, :]
        while prods.shape[0] > 1:
            if prods.shape[0] % 2:
                prods = np.concatenate([prods, np.zeros_like(prods[:1])])
            prods = prods[0::2] + prods[1::2]
        return prods[0]

    return [reversed_k, sequential, pairwise]


def _bf16(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(ml_dtypes.bfloat16).astype(np.float32)


@pytest.mark.parametrize("kind", ["bf16", "fp32", "wide-range", "ties"])
def test_matches_exact_rounding_under_every_summation_order(kind, monkeypatch):
    rng = np.random.default_rng(7)
    K, M, N = 128, 6, 7
    if kind == "bf16":
        s, m = _bf16(rng, (K, M)), _bf16(rng, (K, N))
    elif kind == "fp32":
        s, m = rng.standard_normal((K, M)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    elif kind == "wide-range":  # spans no float64 sum holds exactly: steps 2 and 3
        s = (rng.standard_normal((K, M)) * 2.0 ** rng.integers(-40, 40, (K, M))).astype(np.float32)
        m = (rng.standard_normal((K, N)) * 2.0 ** rng.integers(-40, 40, (K, N))).astype(np.float32)
    else:  # exact fp32 midpoints: 1 + 2**-24 is a tie between 1 and 1 + 2**-23
        s = np.zeros((K, M), np.float32)
        m = np.zeros((K, N), np.float32)
        s[0], s[1], m[0], m[1] = 1.0, 2.0 ** -12, 1.0, 2.0 ** -12
        s[2, :3], m[2, :3] = 2.0 ** -30, 2.0 ** -30  # just above the tie for some elements
    want = _exact(s, m)
    assert np.array_equal(pe_array.pe_matmul(s, m), want)
    for gemm in _orders():
        monkeypatch.setattr(pe_array, "_gemm", gemm)
        got = pe_array.pe_matmul(s, m)
        assert got.tobytes() == want.tobytes(), gemm.__name__


def test_a_term_below_float64_resolution_still_breaks_an_fp32_tie(monkeypatch):
    # x = 1 + 2**-24 + 2**-80: every float64 sum drops 2**-80 and lands on the fp32 tie (-> 1.0), but x is
    # above it, so round_fp32(x) = 1 + 2**-23
    s = np.array([[1.0, 1.0], [2.0 ** -24, 2.0 ** -24], [2.0 ** -80, -2.0 ** -80]], np.float32)
    m = np.ones((3, 1), np.float32)
    want = [np.float32(1 + 2.0 ** -23), np.float32(1.0)]
    assert list(pe_array.pe_matmul(s, m)[:, 0]) == want
    for gemm in _orders():
        monkeypatch.setattr(pe_array, "_gemm", gemm)
        assert list(pe_array.pe_matmul(s, m)[:, 0]) == want


def test_tie_rounds_to_even_not_to_the_fp32_sum():
    s = np.array([[1.0], [2.0 ** -12]], np.float32)
    m = np.array([[1.0], [2.0 ** -12]], np.float32)
    assert pe_array.pe_matmul(s, m)[0, 0] == np.float32(1.0)  # 1 + 2**-24 ties to even
    m[1, 0] = np.float32(2.0 ** -12 * (1 + 2.0 ** -23))
    assert pe_array.pe_matmul(s, m)[0, 0] == np.float32(1 + 2.0 ** -23)  # just above the tie


def test_passes_of_128_rows_are_rounded_then_summed_in_fp32():
    # pass 1: 1.0, pass 2: 2**-25 twice (exact 2**-24): fp32(1 + 2**-24) is 1.0, one exact sum would be too,
    # but make pass 2 carry 3 * 2**-25 so that one exact dot (1 + 1.5 * 2**-24) rounds up while per-pass
    # fp32 accumulation (1.0 + fp32(1.5 * 2**-24)) also rounds up: check the per-pass value directly instead.
    K = 256
    s = np.zeros((K, 1), np.float32)
    m = np.zeros((K, 1), np.float32)
    s[0], m[0] = 1.0, 1.0
    s[128:131], m[128:131] = 2.0 ** -13, 2.0 ** -13  # pass 2 = 3 * 2**-26
    got = pe_array.pe_matmul(s, m, chunk=128)[0, 0]
    assert got == np.float32(np.float32(1.0) + np.float32(3 * 2.0 ** -26))  # == 1.0: the small pass is lost
    assert np.float32(float(Fraction(1) + 3 * Fraction(1, 2 ** 26))) == got
    assert pe_array.pe_matmul(s, m, chunk=256)[0, 0] == got
    s[0], m[0] = 1.0, 1.0 + 2.0 ** -23
    s[1], m[1] = 2.0 ** -12, 2.0 ** -12  # pass 1 = 1 + 2**-23 + 2**-24: a tie that rounds up to 1 + 2**-22
    assert pe_array.pe_matmul(s, m, chunk=128)[0, 0] == np.float32(1 + 2.0 ** -22)


def test_nan_inf_and_zero_are_canonical():
    s = np.array([[np.inf, 1.0, -0.0, 0.0], [1.0, np.nan, -0.0, 1.0]], np.float32)
    m = np.array([[1.0, -np.inf, 0.0], [1.0, 1.0, -0.0]], np.float32)
    out = pe_array.pe_matmul(s, m)
    assert out[0, 0] == np.inf and out[0, 1] == -np.inf and np.isnan(out[0, 2])  # inf + 1; inf * -inf + 1; inf * 0
    assert np.isnan(out[1]).all()  # a NaN operand
    nan_bits = out.view(np.uint32)[np.isnan(out)]
    assert (nan_bits == np.array(np.nan, np.float32).view(np.uint32)).all()
    assert out[2, 0] == 0 and not np.signbit(out[2]).any()  # -0 * 0 + -0 * 1: +0, not -0
    assert out[3, 2] == 0 and not np.signbit(out[3, 2])


def test_a_tile_of_bf16_values_takes_the_exact_path_and_agrees_with_fp32_blas_closely():
    rng = np.random.default_rng(3)
    s, m = _bf16(rng, (128, 128)), _bf16(rng, (128, 512))
    sp_s, _ = pe_array._spans(s)
    assert np.median(sp_s) < 24  # bf16 values use 8 significand bits: most column pairs are exact in float64
    out = pe_array.pe_matmul(s, m)
    ref = s.astype(np.float64).T @ m.astype(np.float64)
    assert np.max(np.abs(out - ref)) <= np.max(np.abs(ref)) * 2.0 ** -24  # within half an fp32 ulp of the max
