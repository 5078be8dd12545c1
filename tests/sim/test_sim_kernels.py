"""Acceptance: our own kernels in both dialects match NumPy references within dtype tolerances."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from sim_helpers import fixture

from nki_assist.api.hardware import get_target
from nki_assist.sim import run_kernel

BF16 = ml_dtypes.bfloat16
rng = np.random.default_rng(1234)


def _softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layernorm(x, g, b, eps):
    x = x.astype(np.float64)
    mu = x.mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=1, keepdims=True) + eps) * g + b


def _scaled_gelu(x, alpha):
    x = x.astype(np.float64)
    erf = np.vectorize(math.erf)
    return alpha * 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _run(name, args, target="trn2", **kw):
    res = run_kernel(fixture(name), None, args, target=get_target(target), **kw)
    assert res.status == "ok", (res.error, [f.message for f in res.findings])
    assert res.findings == [], [f"{f.rule}:{f.line} {f.message}" for f in res.findings]
    return res


@pytest.mark.parametrize("dialect", ["legacy", "new"])
def test_tiled_matmul_bf16_inputs_fp32_psum(dialect):
    K, M, N = 256, 256, 1024
    a = rng.standard_normal((K, M)).astype(BF16)
    b = rng.standard_normal((K, N)).astype(BF16)
    res = _run(f"{dialect}_matmul.py", [a, b])
    out = res.outputs[0]
    ref = a.astype(np.float64).T @ b.astype(np.float64)
    if dialect == "legacy":  # output tensor is bf16: one rounding of the fp32 PSUM sum
        assert out.dtype == BF16
        np.testing.assert_allclose(out.astype(np.float32), ref, rtol=1e-2, atol=1e-2)
    else:  # fp32 output: only fp32 accumulation-order error remains
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)
    mm = [t for t in res.trace if t.op == "nc_matmul"]
    assert len(mm) == (K // 128) * (M // 128) * (N // 512)
    assert all(t.engine == "tensor" and t.extra["k"] == 128 and t.extra["m"] == 128 and t.extra["n"] == 512
               for t in mm)
    assert all(t.dst.buffer == "psum" and t.dst.dtype == "float32" for t in mm)
    assert {s.dtype for t in mm for s in t.srcs} == {"bfloat16"}
    assert res.peaks.psum_banks == 1


@pytest.mark.parametrize("dialect", ["legacy", "new"])
def test_softmax_with_max_subtraction(dialect):
    x = (rng.standard_normal((256, 640)) * 4).astype(BF16)
    x[0, :3] = BF16(80.0)  # exp(80) overflows fp32: only a max-subtracting kernel survives it
    res = _run(f"{dialect}_softmax.py", [x])
    out = res.outputs[0]
    assert out.dtype == BF16
    np.testing.assert_allclose(out.astype(np.float32), _softmax(x.astype(np.float32)), rtol=1e-2, atol=2e-3)
    assert np.isfinite(out.astype(np.float32)).all()
    engines = {t.op: t.engine for t in res.trace}
    assert engines["activation"] == "scalar"
    assert engines["tensor_reduce"] == "vector"


@pytest.mark.parametrize("dialect", ["legacy", "new"])
def test_layernorm_bn_stats_bn_aggr(dialect):
    x = (rng.standard_normal((256, 1024)) * 3 + 5).astype(np.float32)
    g = rng.standard_normal((1, 1024)).astype(np.float32)
    b = rng.standard_normal((1, 1024)).astype(np.float32)
    res = _run(f"{dialect}_layernorm.py", [x, g, b, 1e-5])
    np.testing.assert_allclose(res.outputs[0], _layernorm(x, g, b, 1e-5), rtol=1e-4, atol=1e-4)
    stats = [t for t in res.trace if t.op == "bn_stats"]
    # free_elems describes the output (6 statistics); the input chunk is in srcs
    assert len(stats) == 2 * 2 and all(t.free_elems == 6 and t.engine == "vector" for t in stats)
    assert all(t.srcs[0].shape == (128, 512) for t in stats)
    assert sum(t.op == "bn_aggr" for t in res.trace) == 2


@pytest.mark.parametrize("dialect", ["legacy", "new"])
def test_masked_ragged_elementwise(dialect):
    x = rng.standard_normal((300, 700)).astype(BF16)
    res = _run(f"{dialect}_ragged.py", [x, 1.5])
    out = res.outputs[0]
    assert out.shape == (300, 700) and out.dtype == BF16
    np.testing.assert_allclose(out.astype(np.float32), _scaled_gelu(x, 1.5), rtol=2e-2, atol=2e-2)
    loads = [t for t in res.trace if t.direction == "load"]
    # the last row block carries only 300 - 256 = 44 valid rows of payload
    assert min(t.bytes for t in loads) < max(t.bytes for t in loads)


@pytest.mark.parametrize("dialect", ["legacy", "new"])
def test_transpose(dialect):
    x = rng.standard_normal((256, 384)).astype(BF16)
    res = _run(f"{dialect}_transpose.py", [x])
    out = res.outputs[0]
    assert out.shape == (384, 256)
    assert np.array_equal(out.view(np.uint16), np.ascontiguousarray(x.T).view(np.uint16))  # bit-exact
    tr = [t for t in res.trace if t.op == "nc_transpose"]
    assert len(tr) == 6 and all(t.engine == "tensor" and t.dst.buffer == "psum" for t in tr)


def test_legacy_index_expressions_transposing_load_and_iota():
    x = rng.standard_normal((64, 96)).astype(np.float32)
    res = _run("legacy_index_expr.py", [x])
    out_t, out_iota = res.outputs
    assert np.array_equal(out_t, x.T)
    assert np.array_equal(out_iota, np.arange(64 * 96, dtype=np.int32).reshape(64, 96))
    assert [t.engine for t in res.trace if t.op == "iota"] == ["gpsimd"]


def test_launch_grid_program_id_and_device_print():
    x = rng.standard_normal((384, 32)).astype(np.float32)
    res = run_kernel(fixture("grid_rows.py"), None, [x], target=get_target("trn2"), grid=(3,))
    assert res.status == "ok"
    scale = np.repeat(np.arange(1, 4, dtype=np.float32), 128)[:, None]
    np.testing.assert_allclose(res.outputs[0], x * scale, rtol=1e-6)
    prints = [n for n in res.notes if n.startswith("device_print")]
    assert len(prints) == 3 and all("line 12" in n and "block" in n for n in prints)


def test_trn3_accepts_wide_matmul_that_trn2_rejects():
    a = rng.standard_normal((256, 128)).astype(BF16)
    b = rng.standard_normal((256, 1024)).astype(BF16)
    r3 = run_kernel(fixture("defect_psum_1024.py"), None, [a, b], target=get_target("trn3"))
    r2 = run_kernel(fixture("defect_psum_1024.py"), None, [a, b], target=get_target("trn2"))
    assert r3.status == r2.status == "ok"
    assert r3.findings == []
    assert {f.rule for f in r2.findings} == {"SIM102", "SIM105"}
    np.testing.assert_allclose(r3.outputs[0], a.astype(np.float32).T @ b.astype(np.float32), rtol=1e-5, atol=1e-4)
