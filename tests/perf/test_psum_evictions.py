"""Engine imbalance from the engine timeline (issue 29): VectorE evicting PSUM slice by slice."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np

from nki_assist import perf
from nki_assist.api.hardware import get_target
from nki_assist.sim import run_kernel

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "perf"
TRN2 = get_target("trn2")


def _perf(name: str, k: int = 128):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((k, 128)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((k, 4096)).astype(ml_dtypes.bfloat16)
    run = run_kernel(str(FIX / name), None, [a, b], target=TRN2)
    assert run.status == "ok"
    want = (a.astype(np.float32).T @ b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert np.allclose(run.outputs[0].astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)
    est = perf.estimate(run, TRN2)
    return est, perf.perf_findings(est, run, TRN2)


def test_slice_by_slice_evictions_are_an_imbalance():
    est, found = _perf("psum_slice_evict.py")
    (f,) = [f for f in found if f.rule == "PERF108"]
    vec, ten = est.busy_s["vector"], est.busy_s["tensor"]
    assert vec / ten >= 2 and f.evidence["value"] == round(vec / ten, 2)
    assert (f.evidence["cause"], f.evidence["evictions"], f.evidence["eviction_free"]) == ("psum-eviction", 128, 32)
    assert f.line == 16 and f.est_speedup > 1.25
    assert "Evicting whole PSUM banks (512 fp32 columns)" in f.message


def test_one_eviction_per_accumulated_bank_is_not():
    est, found = _perf("psum_bank_evict.py", k=512)
    assert est.busy_s["vector"] < 2 * est.busy_s["tensor"]
    assert not [f for f in found if f.rule == "PERF108"]
