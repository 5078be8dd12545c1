"""End to end: fixture kernels run on the built-in simulator, then the cost model ranks them."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from nki_assist.api.hardware import get_target
from nki_assist.perf import estimate, perf_findings, to_performance

sim = pytest.importorskip("nki_assist.sim")

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "perf"
TRN1 = get_target("trn1")
TRN2 = get_target("trn2")
RNG = np.random.default_rng(7)


def _run(name, args, target, **kwargs):
    run = sim.run_kernel(str(FIX / f"{name}.py"), name, args, kwargs or None, target=target)
    assert run.status == "ok", (run.status, run.error)
    return run


@pytest.fixture(scope="module")
def matmul_runs():
    M, K, N = 512, 512, 1024
    a = RNG.standard_normal((K, M)).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    ref = a.astype(np.float32).T @ b.astype(np.float32)
    out = {}
    for name in ("matmul_tiled", "matmul_hoisted", "matmul_block_free", "matmul_blocked_all"):
        run = _run(name, [a, b], TRN1)
        np.testing.assert_allclose(run.outputs[0].astype(np.float32), ref, rtol=2e-2, atol=1.0)
        out[name] = (run, estimate(run, TRN1))
    return out


def test_matmul_tutorial_progression_orders(matmul_runs):
    names = ["matmul_tiled", "matmul_hoisted", "matmul_block_free", "matmul_blocked_all"]
    ests = [matmul_runs[n][1] for n in names]
    times = [e.estimated_time_s for e in ests]
    mfus = [e.mfu_percent for e in ests]
    reds = [e.redundancy for e in ests]
    assert times[0] > times[1] > times[2] > times[3]
    assert mfus[0] < mfus[1] < mfus[2] < mfus[3]
    assert reds[0] > reds[1] > reds[2] > reds[3] >= 1.0
    assert all(e.useful_flops == 2 * 512 * 512 * 1024 for e in ests)
    # the naive kernel's loads are flagged, at the load lines of the fixture
    run, est = matmul_runs["matmul_tiled"]
    fs = {f.rule: f for f in perf_findings(est, run, TRN1)}
    assert "PERF101" in fs and fs["PERF101"].line in (15, 16)
    assert fs["PERF101"].file.endswith("matmul_tiled.py")


def test_blocked_kernel_is_compute_bound_and_reports(matmul_runs):
    run, est = matmul_runs["matmul_blocked_all"]
    perf = to_performance(est).model_dump(mode="json")
    assert perf["bottleneck"] == est.bottleneck and est.bottleneck_engine in ("tensor", "dma")
    assert perf["engines"]["tensor"]["instructions"] == 32
    assert perf["bounds"]["perfect_overlap_us"] <= perf["estimated_time_us"] <= perf["bounds"]["no_overlap_us"]
    assert perf["hbm_read_bytes"] == est.hbm.read_bytes > 0


def test_row_at_a_time_softmax_partition_underutilized():
    x = RNG.standard_normal((512, 512)).astype(np.float32)
    run = _run("rows_softmax", [x], TRN2)
    est = estimate(run, TRN2)
    fs = {f.rule: f for f in perf_findings(est, run, TRN2)}
    f = fs["PERF103"]
    lane_ratio = f.evidence["lane_ratio"]
    assert lane_ratio == pytest.approx(128)
    assert 0.5 * lane_ratio <= f.est_speedup <= lane_ratio
    packed = estimate(_run("rows_softmax_packed", [x], TRN2), TRN2)
    # the packed kernel really is faster by a large factor, within the finding's bound
    assert 0.5 * f.est_speedup <= est.estimated_time_s / packed.estimated_time_s <= f.est_speedup * 1.05
    assert "PERF103" not in {g.rule for g in perf_findings(packed, run, TRN2)}


def test_k32_contraction_tensor_engine_underutilized():
    a = RNG.standard_normal((512, 512)).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal((512, 1024)).astype(ml_dtypes.bfloat16)
    run = _run("matmul_k32", [a, b], TRN2)
    est = estimate(run, TRN2)
    fs = {f.rule: f for f in perf_findings(est, run, TRN2)}
    f = fs["PERF104"]
    assert f.evidence["median_k"] == 32 and f.evidence["value"] == pytest.approx(25.0, abs=0.5)
    assert f.line == 24 and 1.05 <= f.est_speedup <= 4.0
