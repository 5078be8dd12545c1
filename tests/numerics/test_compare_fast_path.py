"""tolerance.compare's finite-only path gives what the full computation gives."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nki_assist.contracts import tolerance


def _general(actual, expected, rtol, atol):
    """What compare() computed for finite data before the shortcut: every mask, ulp_of on every element."""
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    diff = np.abs(a - e)
    bad = ~(diff <= atol + rtol * np.abs(e))
    flat = int(np.argmax(diff))
    rel_mask = np.abs(e) > max(atol, np.finfo(np.float64).tiny)
    max_rel = float((diff[rel_mask] / np.abs(e[rel_mask])).max()) if np.any(rel_mask) else 0.0
    ulp = diff / tolerance.ulp_of(np.maximum(np.abs(e), atol) if atol > 0 else e, actual.dtype)
    n = a.size
    return tolerance.Agreement(
        shape=tuple(actual.shape), dtype=np.dtype(actual.dtype).name, elements=n, max_abs=float(diff.max()),
        max_rel=max_rel, max_ulp=float(ulp.max()), mean_abs=float(diff.mean()), mismatches=int(bad.sum()),
        mismatch_fraction=int(bad.sum()) / n, nan_actual=0, inf_actual=0, nan_expected=0, inf_expected=0,
        worst_index=tuple(int(i) for i in np.unravel_index(flat, a.shape)), worst_actual=float(a.ravel()[flat]),
        worst_expected=float(e.ravel()[flat]), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32])
@pytest.mark.parametrize("tol", [(2e-2, 1e-2), (0.0, 0.0), (1e-5, 0.0), (0.0, 1e-3)])
def test_finite_path_equals_the_general_computation(dtype, tol):
    rng = np.random.default_rng(11)
    for shape in [(1,), (7,), (33, 17), (64, 512)]:
        x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-4, 4, shape)).astype(dtype)  # fp16-finite
        y = x.astype(np.float64) + rng.standard_normal(shape) * 10.0 ** rng.integers(-12, 1, shape)
        flat = y.reshape(-1)
        # values just below a power of two, where log2 rounds up and ulp_of doubles
        flat[: flat.size // 2] = 2.0 ** rng.integers(-20, 20, flat.size // 2) * (1 - 2.0 ** -53)
        got = tolerance.compare(x, y, rtol=tol[0], atol=tol[1])
        want = _general(x, y, *tol)
        assert dataclasses.asdict(got) == dataclasses.asdict(want), shape


def test_identical_outputs_have_zero_ulps_and_nonfinite_outputs_take_the_general_path():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    assert tolerance.compare(x, x.astype(np.float64), rtol=0, atol=0).max_ulp == 0.0
    got = tolerance.compare(np.array([1.0, np.nan, np.inf], np.float32), np.array([1.0, 2.0, np.inf]), rtol=0, atol=0)
    assert got.nan_actual == 1 and got.inf_actual == 1 and got.inf_expected == 1 and got.mismatches == 1
    assert got.max_abs == float("inf") and got.worst_index == (1,)


def test_max_ulp_is_found_where_the_relative_error_is_not_largest():
    # |e| = 1.0 sits at the bottom of its binade, 1.99 near the top: the second has the smaller diff/|e|
    # but the larger diff/ulp
    expected = np.array([1.0, 1.99, 100.0])
    actual = (expected + np.array([1e-3, 0.6e-3 * 1.99, 0.0])).astype(np.float32)
    got = tolerance.compare(actual, expected, rtol=0, atol=0)
    want = _general(actual, expected, 0, 0)
    assert got.max_ulp == want.max_ulp
    assert want.max_ulp == float(abs(float(actual[1]) - 1.99) / 2.0 ** -23)
