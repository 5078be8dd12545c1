"""Input generation (deterministic, rounded once) and the agreement metrics."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nki_assist.numerics.inputs import input_rng, make_inputs, round_to, upcast
from nki_assist.numerics.spec import load_spec
from nki_assist.contracts.tolerance import compare, cross_check_tolerance, ulp_of


def test_inputs_are_deterministic_and_in_kernel_order(axpy_port):
    spec = load_spec(axpy_port)
    a = make_inputs(spec, "aligned")
    b = make_inputs(spec, "aligned")
    assert [type(v) for v in a] == [np.ndarray, np.ndarray, float] and a[2] == 0.5
    assert a[0].dtype == ml_dtypes.bfloat16 and a[0].shape == (4, 64)
    assert np.array_equal(a[0].view(np.uint16), b[0].view(np.uint16))
    assert not np.array_equal(a[0].astype(np.float32), a[1].astype(np.float32))  # per-input seeds differ


def test_values_are_float64_draws_rounded_once(axpy_port):
    spec = load_spec(axpy_port)
    x = make_inputs(spec, "aligned")[0]
    draw = input_rng("x", 0).standard_normal(4 * 64).reshape(4, 64)  # dist normal, mean 0, scale 1
    assert np.array_equal(x.view(np.uint16), draw.astype(ml_dtypes.bfloat16).view(np.uint16))
    y = make_inputs(spec, "aligned")[1]
    draw_y = input_rng("y", 3).uniform(-1.0, 1.0, 4 * 64).reshape(4, 64)
    assert np.array_equal(y.astype(np.float64), draw_y.astype(ml_dtypes.bfloat16).astype(np.float64))
    assert -1.0 <= y.astype(np.float32).min() and y.astype(np.float32).max() <= 1.0


def test_seed_stream_is_stable_across_sizes(axpy_port):
    """Same input name and seed -> the same value stream; a bigger size extends the smaller one."""
    spec = load_spec(axpy_port)
    small = make_inputs(spec, "aligned")[0].reshape(-1)
    big = make_inputs(spec, "ragged")[0].reshape(-1)
    assert np.array_equal(small.view(np.uint16), big[: small.size].view(np.uint16))


def test_round_to_saturates_fp8_and_ints():
    v = np.array([1000.0, -1000.0, 1.0, 2.5])
    e4 = round_to(v, np.dtype(ml_dtypes.float8_e4m3))
    assert e4.astype(np.float32).tolist() == [240.0, -240.0, 1.0, 2.5]
    fn = round_to(v, np.dtype(ml_dtypes.float8_e4m3fn))
    assert not np.isnan(fn.astype(np.float32)).any() and fn.astype(np.float32)[0] == 448.0
    i8 = round_to(v, np.dtype(np.int8))
    assert i8.tolist() == [127, -128, 1, 2]  # rint is round-half-even


def test_upcast_makes_float64_keeps_ints_and_scalars():
    x = np.ones((2, 2), dtype=ml_dtypes.bfloat16)
    out = upcast([x, np.arange(3, dtype=np.int32), 0.5, "gelu"])
    assert out[0].dtype == np.float64 and out[1].dtype == np.int32 and out[2:] == [0.5, "gelu"]


def test_golden_inputs_replace_generated_ones(axpy_port, tmp_path):
    import shutil

    for f in ("kernel.py", "reference.py"):
        shutil.copy(axpy_port.parent / f, tmp_path / f)
    gx = np.full((4, 64), 3.0, dtype=np.float32)
    np.savez(tmp_path / "gold_in.npz", x=gx, y=np.zeros((4, 64), dtype=np.float32))
    text = axpy_port.read_text().replace("[tolerance]", '[golden]\ninputs = "gold_in.npz"\n\n[tolerance]')
    (tmp_path / "port.toml").write_text(text)
    spec = load_spec(tmp_path / "port.toml")
    x, y, _ = make_inputs(spec, "aligned")
    assert x.dtype == ml_dtypes.bfloat16 and float(x.astype(np.float32).max()) == 3.0
    x2, _, _ = make_inputs(spec, "ragged")  # golden belongs to the first size only
    assert x2.shape == (4, 70) and float(x2.astype(np.float32).max()) != 3.0


def test_compare_counts_mismatches_nan_and_worst():
    e = np.arange(1, 11, dtype=np.float64)
    a = e.astype(np.float32).copy()
    a[3] += 0.5  # outside rtol 1e-2 * 4 + atol 1e-3
    a[7] = np.nan
    agr = compare(a, e, rtol=1e-2, atol=1e-3)
    assert agr.mismatches == 2 and agr.mismatch_fraction == 0.2 and not agr.passed
    assert agr.nan_actual == 1 and agr.inf_actual == 0
    assert agr.worst_index == (7,) and agr.max_abs == float("inf")  # NaN where a number was expected
    assert agr.max_rel == pytest.approx(0.5 / 4)
    j = agr.to_json()
    assert j["max_abs"] == "inf" and j["passed"] is False and j["worst_index"] == [7]


def test_compare_ulp_in_output_dtype():
    e = np.array([1.0, 1.0, 256.0])
    a = np.array([1.0, 1.0 + 2**-7, 258.0]).astype(ml_dtypes.bfloat16)  # 1 bf16 ulp at 1 and at 256
    agr = compare(a, e, rtol=0, atol=0)
    assert agr.max_ulp == pytest.approx(1.0) and agr.mismatches == 2 and agr.worst_index == (2,)
    assert ulp_of(np.array([1.0]), np.dtype(np.float32))[0] == 2**-23
    agr32 = compare(np.float32([1.0 + 2**-22]), np.array([1.0]), rtol=0, atol=0)
    assert agr32.max_ulp == pytest.approx(2.0)


def test_compare_equal_inf_and_nan_both_sides_match():
    e = np.array([np.inf, np.nan, 1.0])
    agr = compare(np.array([np.inf, np.nan, 1.0]), e, rtol=0, atol=0)
    assert agr.passed and agr.max_abs == 0.0 and agr.nan_expected == 1 and agr.inf_expected == 1
    with pytest.raises(ValueError, match="shape"):
        compare(np.zeros(3), np.zeros(4), rtol=0, atol=0)


def test_cross_check_tolerance_by_dtype():
    assert cross_check_tolerance(ml_dtypes.bfloat16) == (2e-2, 1e-2)
    assert cross_check_tolerance(np.int32) == (0.0, 0.0)
