"""Storage rounding: bit-exact RNE through ml_dtypes, stochastic rounding, precise=False."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from sim_helpers import fixture

from nki_assist.api.hardware import get_target
from nki_assist.sim import run_kernel
from nki_assist.sim.dtypes import Rounder, resolve

BF16 = ml_dtypes.bfloat16


def _hard_fp32_values() -> np.ndarray:
    """Random values plus ties, carries into the exponent, overflow, subnormals, signed zeros, inf, NaN."""
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**32, size=128 * 96, dtype=np.uint64).astype(np.uint32)
    v = bits.view(np.float32).copy()
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 3.4e38, -3.4e38, 1e-40, -1e-40,
                        1.00390625, 1.01171875, 65504.0, 240.0, 448.0, 57344.0], np.float32)
    ties = (np.arange(64, dtype=np.uint32) << 16 | 0x8000).view(np.float32) + 0  # exact bf16 ties
    v[: special.size] = special
    v[special.size: special.size + ties.size] = ties.view(np.float32)
    v = np.where(np.isnan(v), np.float32(1.5), v)  # NaN payloads are compared separately
    return v.reshape(128, 96)


@pytest.mark.parametrize("dialect", ["legacy", "new"])
def test_bf16_store_is_bit_identical_to_ml_dtypes_rne(dialect):
    x = _hard_fp32_values()
    res = run_kernel(fixture(f"{dialect}_cast.py"), None, [x, BF16], target=get_target("trn2"))
    assert res.status == "ok", res.error
    out = res.outputs[0]
    expected = np.asarray(x, np.float32).astype(ml_dtypes.bfloat16)
    assert out.dtype == ml_dtypes.bfloat16
    assert np.array_equal(out.view(np.uint16), expected.view(np.uint16))


@pytest.mark.parametrize("dtype", ["float16", "float8_e4m3", "float8_e5m2", "float8_e4m3fn"])
def test_other_low_precision_stores_match_ml_dtypes(dtype):
    x = (np.random.default_rng(5).standard_normal((128, 64)) * 20).astype(np.float32)
    npd = resolve(dtype).np_dtype
    res = run_kernel(fixture("legacy_cast.py"), None, [x, npd], target=get_target("trn3"))
    assert res.status == "ok", res.error
    out = res.outputs[0]
    expected = x.astype(npd)
    assert out.dtype == npd
    assert np.array_equal(out.view(np.uint8), expected.view(np.uint8))


def test_nan_survives_a_bf16_store():
    x = np.full((128, 4), np.nan, np.float32)
    res = run_kernel(fixture("legacy_cast.py"), None, [x, BF16], target=get_target("trn2"))
    assert np.isnan(res.outputs[0].astype(np.float32)).all()


def test_precise_false_keeps_fp32_storage():
    x = np.full((128, 8), 1.0 + 2.0**-12, np.float32)  # not representable in bf16
    res = run_kernel(fixture("legacy_cast.py"), None, [x, BF16], target=get_target("trn2"), precise=False)
    assert res.outputs[0].dtype == np.float32
    np.testing.assert_array_equal(res.outputs[0], x)
    precise = run_kernel(fixture("legacy_cast.py"), None, [x, BF16], target=get_target("trn2"))
    np.testing.assert_array_equal(precise.outputs[0].astype(np.float32), np.ones_like(x))


def test_stochastic_rounding_is_unbiased_and_seeded():
    x = np.full((128, 512), 1.0 + 2.0**-10, np.float32)  # 1/8 of the way from 1.0 to the next bf16
    run = lambda seed: run_kernel(fixture("legacy_cast.py"), None, [x, BF16], target=get_target("trn2"),
                                  stochastic_rounding=True, seed=seed).outputs[0].astype(np.float32)
    a, b, a2 = run(1), run(2), run(1)
    up = 1.0 + 2.0**-7
    assert set(np.unique(a)) == {1.0, up}
    assert abs((a == up).mean() - 0.125) < 0.01  # rounds up with probability 1/8
    assert abs(a.mean() - x.mean()) < 1e-4  # unbiased, unlike RNE which gives exactly 1.0
    np.testing.assert_array_equal(a, a2)
    assert not np.array_equal(a, b)


def test_stochastic_rounding_fp8_uses_both_neighbours():
    r = Rounder(precise=True, stochastic=True, seed=0)
    v = np.full(20000, 1.0 + 1.0 / 32, np.float32)  # a quarter of an e4m3 ulp (1/8) above 1.0
    out = r(v, resolve("float8_e4m3"))
    assert set(np.unique(out)) == {1.0, 1.125}
    assert abs((out == 1.125).mean() - 0.25) < 0.02


def test_int_stores_round_to_nearest_even_and_saturate():
    r = Rounder()
    out = r(np.array([0.5, 1.5, 2.5, -0.5, 3e9, -3e9, np.nan], np.float32), resolve("int32"))
    assert out.tolist() == [0, 2, 2, 0, 2**31 - 1, -(2**31), 0]
