"""End to end with the real simulator (nki_assist.sim): the bundled example and the limits.

Skipped only while the simulator module is not importable.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from nki_assist.cli import main
from nki_assist.toolchain.builtin import BuiltinBackend

from toolchain_paths import PORTS

sim = pytest.importorskip("nki_assist.sim")
if not hasattr(sim, "run_kernel"):
    pytest.skip("nki_assist.sim.run_kernel not available yet", allow_module_level=True)

EXAMPLE = PORTS.parents[2] / "examples" / "gemm_bias_relu" / "port.toml"
LIMITS = str(PORTS / "nki_limits" / "limits_nki.py")


def _line(path, text):
    return next(i for i, l in enumerate(open(path).read().splitlines(), 1) if text in l)


def test_example_port_aligned_passes_ragged_fails(capsys):
    code = main(["simulate", str(EXAMPLE), "--format", "json", "--timeout", "120"])
    doc = json.loads(capsys.readouterr().out)
    aligned, ragged = doc["sizes"]
    assert aligned["status"] == "ok" and aligned["within_tolerance"] is True
    (agr,) = aligned["agreement"]
    assert agr["mismatches"] == 0 and agr["max_rel"] < 1e-3  # bf16 inputs, fp32 PSUM: rounding only
    # M=256, K=512, N=1024 with 128 x 512 output tiles and 64-deep K tiles.
    tiles = (256 // 128) * (1024 // 512)
    matmuls = [e for e in aligned["engines"]]
    assert "tensor" in matmuls and aligned["engines"]["tensor"]["count"] >= tiles * (512 // 64)
    assert aligned["peaks"]["psum_bytes_per_partition"] >= 512 * 4
    assert 0 < aligned["peaks"]["sbuf_percent"] < 100
    # N=700: columns 512..699 are never written by the port.
    assert ragged["status"] == "ok" and ragged["within_tolerance"] is False
    (ragr,) = ragged["agreement"]
    assert ragr["mismatch_fraction"] == pytest.approx(188 / 700)
    assert ragr["worst_index"][1] >= 512
    assert any(f["rule"] == "TC107" and "'ragged'" in f["message"] for f in doc["findings"])
    assert code == 1


def test_real_kernel_endless_loop_times_out():
    t0 = time.perf_counter()
    r = BuiltinBackend().run(LIMITS, "spin", [np.zeros((128, 4), np.float32)], timeout_s=3)
    assert time.perf_counter() - t0 < 3 + 20  # limit + start-up on a loaded 2-core machine
    assert r.status == "timeout"
    f = next(f for f in r.findings if f.rule == "TC101")
    assert f.line in (_line(LIMITS, "while i < x.shape[0]"), _line(LIMITS, "i = i * 1"))


def test_real_kernel_100gb_allocation_is_out_of_memory():
    r = BuiltinBackend().run(LIMITS, "huge", [np.zeros((128, 4), np.float32)], timeout_s=60, memory_mb=2048)
    assert r.status == "out-of-memory"
    f = next(f for f in r.findings if f.rule == "TC102" or f.line == _line(LIMITS, "scratch = nl.ndarray"))
    assert f.line == _line(LIMITS, "scratch = nl.ndarray")


def test_real_kernel_assert_reports_its_line():
    r = BuiltinBackend().run(LIMITS, "picky", [np.zeros((128, 4), np.float32)], timeout_s=60)
    assert r.status == "kernel-error"
    line = _line(LIMITS, "assert x.shape[1] % 512 == 0")
    assert r.error_line == line or any(f.line == line for f in r.findings)
    assert any(f.line == line and f.severity.value == "error" for f in r.findings)
