"""Cost-model numbers on index-grid kernels (both dialects) equal the true transfers; no estimated speedup
exceeds the kernel's roofline bound."""

from __future__ import annotations

import numpy as np
import pytest

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.perf import estimate, perf_findings
from nki_assist.perf.model import roofline_floor
from nki_assist.rules.nki.run import run_nki_rules
from nki_assist.sim import run_kernel

TRN2 = get_target("trn2")

LEGACY_GRID = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def scale_rows(x):
    R, C = x.shape
    P = 128
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(C)[None, :]
    for t in nl.affine_range((R + P - 1) // P):
        tile = nl.load(x[t * P + i_p, i_f], mask=(t * P + i_p < R))
        y = nl.multiply(tile, 2.0)
        nl.store(out[t * P + i_p, i_f], value=y, mask=(t * P + i_p < R))
    return out
"""

NEW_GRID = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scale_rows(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range((R + 127) // 128):
        n = min(128, R - t * 128)
        xt = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:n, 0:C], src=x[t * 128:t * 128 + n, 0:C])
        yt = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=yt[0:n, 0:C], data=xt[0:n, 0:C], op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[t * 128:t * 128 + n, 0:C], src=yt[0:n, 0:C])
    return out
"""


def review(tmp_path, src, x, **kw):
    path = tmp_path / "k.py"
    path.write_text(src)
    run = run_kernel(str(path), None, [x], target=TRN2)
    assert run.status == "ok" and run.findings == []
    est = estimate(run, TRN2, **kw)
    static = [f for f in run_nki_rules(parse_nki(src, "k.py"), TRN2) if f.rule == "NKI108"]
    return est, perf_findings(est, run, TRN2), static


@pytest.mark.parametrize("src", [LEGACY_GRID, NEW_GRID], ids=["legacy", "new"])
def test_ragged_elementwise_rows_report_true_bytes_and_no_dma_findings(tmp_path, src):
    x = np.ones((300, 512), np.float32)
    est, fs, static = review(tmp_path, src, x)
    # each element read once and written once: 300 x 512 x 4 bytes, no redundancy
    assert est.hbm.read_bytes == est.hbm.unique_read_bytes == 300 * 512 * 4
    assert est.hbm.write_bytes == est.hbm.unique_write_bytes == 300 * 512 * 4
    # 3 loads + 3 stores, one descriptor per active partition: 128 + 128 + 44 each way
    assert est.dma_transfers == 2 * (128 + 128 + 44)
    assert est.dma_bytes == 2 * 300 * 512 * 4
    assert [f.rule for f in fs if f.rule in ("PERF101", "PERF102")] == []
    assert static == []


@pytest.mark.parametrize("src", [LEGACY_GRID, NEW_GRID], ids=["legacy", "new"])
def test_narrow_rows_are_small_transfers_with_the_exact_descriptor_size(tmp_path, src):
    # 64 fp32 columns: every descriptor carries one 256 B row (hand count: 64 x 4)
    x = np.ones((300, 64), np.float32)
    _est, fs, _static = review(tmp_path, src, x)
    (f,) = [f for f in fs if f.rule == "PERF102"]
    assert f.evidence["value"] == 256.0 and f.evidence["small_transfers"] == 6
    assert "256 B per descriptor" in f.message


def test_static_dma_facts_for_index_grids_slices_and_strides():
    src = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def k(x, y, z):
    R, C = x.shape
    out = nl.ndarray((R, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_c = nl.arange(x.shape[1])[None, :]
    i_f = nl.arange(64)[None, :]
    g = nl.mgrid[0:128, 0:64]
    i_a = nl.arange(4)[None, :, None]
    i_b = nl.arange(16)[None, None, :]
    i_q = nl.arange(128)[:, None, None]
    for t in nl.affine_range(R // 128):
        a = nl.load(x[t * 128 + i_p, i_c])
        b = nl.load(y[t * 128 + i_p, i_f], dtype=nl.float32)
        c = nl.load(y[t * 128 + g.p, g.x])
        d = nl.load(z[t * 128 + i_q, i_a * 16 + i_b], dtype=nl.bfloat16)
        e = nl.load(y[t * 128:(t + 1) * 128, 0:128:2], dtype=nl.float32)
        nl.store(out[t * 128 + i_p, i_f], value=b)
    return out
"""
    fs = {f.line: f for f in run_nki_rules(parse_nki(src, "k.py"), TRN2) if f.rule == "NKI108"}
    lines = src.splitlines()
    ln = lambda text: next(i for i, s in enumerate(lines, 1) if text in s)  # noqa: E731
    # `nl.arange(x.shape[1])`: the extent is unknown, never a per-element size
    assert ln("a = nl.load") not in fs
    # [128, 64] with a known fp32 dtype: 64 x 4 = 256 B per partition
    assert fs[ln("b = nl.load")].evidence["bytes_per_partition"] == 256
    assert fs[ln("b = nl.load")].evidence["shape"] == [128, 64]
    # mgrid .p / .x: the same [128, 64] grid; dtype unknown, so "at most" the fp32 size
    assert fs[ln("c = nl.load")].evidence["bytes_per_partition"] == 256 and "at most" in fs[ln("c = nl.load")].message
    # a 3-axis grid [128, 4, 16] in bf16: 64 x 2 = 128 B per partition
    assert fs[ln("d = nl.load")].evidence["shape"] == [128, 4, 16]
    assert fs[ln("d = nl.load")].evidence["bytes_per_partition"] == 128
    # a strided slice: 64 elements per partition
    assert fs[ln("e = nl.load")].evidence["bytes_per_partition"] == 256


def test_no_estimated_speedup_exceeds_the_roofline(tmp_path):
    x = np.ones((300, 64), np.float32)
    est, fs, _ = review(tmp_path, LEGACY_GRID, x)
    floor = roofline_floor(est.min_bytes, est.useful_flops, TRN2)
    assert est.roofline["min_time_s"] == pytest.approx(floor)
    assert floor == pytest.approx(2 * 300 * 64 * 4 / min(TRN2.hbm_bw_bytes_per_s, 16 * TRN2.dma_bw_per_engine_bytes_per_s))
    for f in fs:
        assert f.est_speedup <= est.estimated_time_s / floor + 0.01
    # claim that the kernel must move more bytes, so that its floor sits halfway to the small-DMA estimate:
    # the finding is capped at the roofline bound
    (small,) = [f for f in fs if f.rule == "PERF102"]
    bw = min(TRN2.hbm_bw_bytes_per_s, 16 * TRN2.dma_bw_per_engine_bytes_per_s)
    want_cap = (1.0 + small.est_speedup) / 2
    must_read = int(est.estimated_time_s / want_cap * bw) - est.hbm.unique_write_bytes
    est, fs, _ = review(tmp_path, LEGACY_GRID, x, min_input_bytes=must_read)
    cap = est.roofline["max_speedup"]
    assert cap == pytest.approx(want_cap, rel=1e-3)
    (f,) = [f for f in fs if f.rule == "PERF102"]
    assert f.evidence["capped"] is True and f.evidence["uncapped_speedup"] > cap
    assert f.est_speedup == pytest.approx(max(1.0, cap), abs=0.01)
    assert "roofline" in f.message and f"{f.evidence['uncapped_speedup']:.2f}x" in f.message
