"""`nki-assist golden`: argument mapping, planning, two-fill capture and the capture folder, against a
CPU stand-in launcher (tests/fakes/cpu_launcher.py); the folder read back by review/simulate."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from nki_assist.numerics import golden_store
from nki_assist.numerics.cuda_compile import Compiled
from nki_assist.numerics.golden_capture import capture_size, device_args, plan_size, size_inputs, write_capture
from nki_assist.numerics.inputs import make_inputs
from nki_assist.numerics.spec import SpecError, load_spec

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "gemm_bias_relu"
sys.path.insert(0, str(REPO / "tests" / "fakes"))
import cpu_launcher  # noqa: E402


@pytest.fixture
def port(tmp_path):
    dst = tmp_path / "gemm"
    shutil.copytree(EXAMPLE, dst)
    return dst / "port.toml"


def _edit(spec: Path, old: str, new: str) -> None:
    text = spec.read_text()
    assert old in text
    spec.write_text(text.replace(old, new, 1))


def _capture(spec_path: Path, jitter: float = 0.0):
    cpu_launcher.JITTER = jitter
    spec = load_spec(spec_path)
    launcher = cpu_launcher.make()
    caps = [capture_size(spec, s, launcher, launcher.load(None, spec.cuda.kernel)) for s in spec.sizes]
    comp = Compiled(True, "nvrtc 12.9", "sm_80", ["-ftz=false"])
    record = write_capture(spec, spec.dir / "golden", caps, device=launcher.device(), compiled=comp,
                           launcher=launcher.name)
    return spec, caps, record


def test_plan_maps_inputs_scalars_and_launch_dimensions(port):
    spec = load_spec(port)
    p = plan_size(spec, spec.size("ragged"))  # M=128 K=256 N=700
    assert p.grid == (11, 2, 1) and p.block == (16, 16, 1) and p.shared_bytes == 0
    a, b, bias, c, m, n, k = p.args
    assert (a.label, a.shape, a.transpose, a.dtype.name) == ("lhsT", (128, 256), (1, 0), "float32")
    assert (c.kind, c.shape, c.output) == ("output", (128, 700), 0)
    assert [int(x.value) for x in (m, n, k)] == [128, 700, 256] and m.value.dtype == np.int32
    args = device_args(p, size_inputs(spec, spec.size("ragged")), 0xFF)
    lhsT = make_inputs(spec, "ragged")[0]
    assert args[0].flags.c_contiguous and np.array_equal(args[0], lhsT.T.astype(np.float32))
    assert np.isnan(args[3]).all()  # the output starts as NaN bytes (0xFF), not zeros


def test_capture_writes_goldens_for_every_size_that_review_reads_back(port):
    spec, caps, record = _capture(port)
    doc = json.loads(record.read_text())
    assert set(doc["sizes"]) == {"aligned", "ragged"} and doc["device"]["name"] == "CPU stand-in"
    assert doc["flags"] == ["-ftz=false"] and doc["nki_assist"]
    meta = doc["sizes"]["ragged"]["outputs"][0]
    assert meta["unwritten"] == 0 and meta["run_to_run"]["identical"] == 128 * 700
    _edit(port, "[tolerance]", '[golden]\ndir = "golden"\n\n[tolerance]')
    spec = load_spec(port)
    for size in spec.sizes:
        outs, info = golden_store.golden_for(spec, size)
        args = make_inputs(spec, size)
        want = np.maximum(args[0].astype(np.float64).T @ args[1].astype(np.float64) + args[2], 0.0)
        assert np.allclose(outs[0], want, rtol=1e-6, atol=1e-5)
        assert info["label"] == "captured on CPU stand-in (driver 0.0, CUDA 0.0)"


def test_unwritten_elements_are_nan_and_counted(port):
    # grid N // 64 instead of cdiv: the 700 - 640 = 60 tail columns are never launched
    _edit(port, 'grid = ["cdiv(N, 64)", "cdiv(M, 64)"]', 'grid = ["N // 64", "cdiv(M, 64)"]')
    _, caps, _ = _capture(port)
    ragged = next(c for c in caps if c.size == "ragged")
    assert ragged.meta[0]["unwritten"] == 128 * 60
    assert np.isnan(ragged.outputs[0][:, 640:]).all() and np.isfinite(ragged.outputs[0][:, :640]).all()


def test_run_to_run_spread_is_recorded(port):
    _, caps, _ = _capture(port, jitter=1e-6)
    rr = caps[0].meta[0]["run_to_run"]
    assert rr["identical"] < rr["written"] and 0 < rr["max_rel"] < 2e-6


def test_a_capture_of_other_inputs_is_refused_with_the_input_that_changed(port):
    _capture(port)
    _edit(port, 'rhs  = { shape = ["K", "N"], dtype = "bfloat16" }', 'rhs  = { shape = ["K", "N"], dtype = "bfloat16", seed = 7 }')
    _edit(port, "[tolerance]", '[golden]\ndir = "golden"\n\n[tolerance]')
    spec = load_spec(port)
    with pytest.raises(SpecError, match=r"golden\.dir: the capture of size 'aligned' was made from other inputs.*"
                                        r"input 'rhs' differs"):
        golden_store.golden_for(spec, spec.size("aligned"))
    from nki_assist.cli import main

    assert main(["simulate", str(port), "--size", "aligned"]) == 2  # a usage error naming it, not a result


def test_a_size_not_captured_is_not_compared_against_anything(port):
    spec, _, record = _capture(port)
    doc = json.loads(record.read_text())
    del doc["sizes"]["ragged"]
    record.write_text(json.dumps(doc))
    _edit(port, "[tolerance]", '[golden]\ndir = "golden"\n\n[tolerance]')
    spec = load_spec(port)
    assert golden_store.golden_for(spec, spec.size("ragged")) is None
    assert golden_store.golden_for(spec, spec.size("aligned")) is not None


def test_review_names_the_capture_and_its_tolerance_covers_the_gpu_spread(port, capsys):
    from nki_assist.cli import main

    _capture(port, jitter=2e-4)  # the second launch differs by up to 2e-4 relative (like float atomics)
    _edit(port, "[tolerance]", '[golden]\ndir = "golden"\n\n[tolerance]')
    main(["review", str(port), "--format", "json", "--llm", "none", "--size", "aligned", "-q"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["numerics"]["gpu_model_sources"] == {"aligned": "captured on CPU stand-in (driver 0.0, CUDA 0.0)"}
    (f,) = [f for f in doc["findings"] if f["rule"] == "NUM106"]
    assert "The port and the CUDA output, captured on CPU stand-in (driver 0.0, CUDA 0.0), differ" in f["message"]
    spread = f["evidence"]["gpu_spread"][0]
    assert spread["max_rel"] > 1e-4 and f["evidence"]["needed_rtol"] >= 1.5 * spread["max_rel"]
    assert "covers the GPU's own run-to-run spread" in f["message"]


def test_gap_verdict_counts_the_spread_in_bound_and_tolerance():
    from nki_assist.contracts.tolerance import compare, gap_verdict

    gpu = np.linspace(1, 2, 100)
    port = gpu * (1 + 1e-6)
    gap = compare(port, gpu, rtol=1e-2, atol=1e-3)
    plain = gap_verdict(gap, scale=2.0, reduction_length=1)
    spread = gap_verdict(gap, scale=2.0, reduction_length=1, spread_abs=1e-3, spread_rel=5e-4)
    assert plain.kind == "beyond-rounding"  # 2e-6 at K = 1 is more than fp32 rounding of values up to 2
    assert spread.kind == "rounding" and spread.rtol == 1e-3 and spread.atol == 2e-3
