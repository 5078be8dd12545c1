"""Provenance in the simulator: write coverage of outputs (SIM112 at the statement to change, SIM118 for
stores that overwrite each other, SIM109 with the offsets) and the NaN/Inf sanitizer's first fault."""

from __future__ import annotations

import numpy as np
import pytest
from sim_helpers import expected_markers, fixture

from nki_assist.api.hardware import get_target
from nki_assist.sim import run_kernel

F32 = np.float32
TRN2 = get_target("trn2")
rng = np.random.default_rng(12)


def run(name, *args, **kw):
    res = run_kernel(fixture(name), None, list(args), target=TRN2, **kw)
    assert res.status == "ok", res.error
    return res


def by_rule(res):
    return {f.rule: f for f in res.findings}


def test_store_offset_stepping_by_the_wrong_tile_is_located_at_the_store_new():
    x = rng.standard_normal((128, 2048)).astype(F32)
    res = run("new_store_stride.py", x, 2.0)
    assert sorted((f.rule, f.line) for f in res.findings) == expected_markers("new_store_stride.py")
    f = by_rule(res)["SIM112"]
    assert f.category == "indexing-error"
    ev = f.evidence
    assert (ev["actual_step"], ev["expected_step"], ev["loop_var"]) == (128, 512, "n")
    assert ev["actual_offsets"] == [0, 128, 256, 384] and ev["expected_offsets"] == [0, 512, 1024, 1536]
    assert ev["offset_expression"] == "n * TILE_M" and ev["unwritten_elements"] == 128 * (2048 - 896)
    assert "`n * 512`" in f.message and "[0:128, 896:2048]" in f.message
    assert f.fix == "Step the store's offset by the tile extent: `n * 512` instead of `n * TILE_M`."
    assert [(r.line, r.message) for r in f.related] == [(15, "loop over `n`"), (14, "out allocated here")]
    # the overlapping iterations are in the store log: n=1 rewrote 384 columns of n=0, all different
    ov = [o for o in res.provenance.outputs[0].overlaps if o.iteration == (("n", 1),)]
    assert [(o.prev_line, o.prev_iteration, o.elements, o.differing) for o in ov] == [
        (19, (("n", 0),), 128 * 384, 128 * 384)]
    np.testing.assert_allclose(res.outputs[0][:, 384:896], 2.0 * x[:, 1536:2048], rtol=1e-6)


def test_parallel_loop_overlap_extends_sim109_with_the_offsets_legacy():
    x = rng.standard_normal((128, 2048)).astype(F32)
    res = run("legacy_store_stride.py", x, 2.0)
    assert sorted((f.rule, f.line) for f in res.findings) == expected_markers("legacy_store_stride.py")
    rules = by_rule(res)
    s109, s112 = rules["SIM109"], rules["SIM112"]
    assert s109.category == "loop-carried-dependency"  # the id and category of SIM109 are unchanged
    for f in (s109, s112):
        assert (f.evidence["actual_step"], f.evidence["expected_step"]) == (128, 512)
        assert f.evidence["offset_expression"] == "n * 128 + i_f"
        assert "`n * 512`" in f.message


def test_misplaced_masked_tail_is_located_at_its_store_legacy():
    x, y = rng.standard_normal((2, 300, 64)).astype(F32)
    res = run("legacy_tail_offset.py", x, y)
    assert sorted((f.rule, f.line) for f in res.findings) == expected_markers("legacy_tail_offset.py")
    f = res.findings[0]
    ev = f.evidence
    assert f.category == "indexing-error"
    assert (ev["actual_offset"], ev["expected_offset"], ev["axis"]) == (128, 256, 0)
    assert ev["store_region"] == [[128, 172], [0, 64]] and ev["offset_expression"] == "r0 - 128 + i_p"
    assert (ev["overwrites_line"], ev["overwritten_elements"]) == (17, 44 * 64)
    assert f.fix == ("Make the store at line 23 start at 256 along dim 0 (`r0 - 128 + i_p` gives 128), the first "
                     "element no other store covers.")
    assert [r.line for r in f.related] == [23, 17, 10]
    # aligned size: no tail, nothing to report
    x2, y2 = rng.standard_normal((2, 256, 64)).astype(F32)
    assert run("legacy_tail_offset.py", x2, y2).findings == []


def test_tail_offset_variable_is_located_at_its_assignment_new():
    x, y = rng.standard_normal((2, 300, 64)).astype(F32)
    res = run("new_tail_offset.py", x, y)
    assert sorted((f.rule, f.line) for f in res.findings) == expected_markers("new_tail_offset.py")
    f = res.findings[0]
    ev = f.evidence
    assert (ev["offset_defined_line"], ev["offset_definition"], ev["store_line"]) == (24, "r0 = R // P", 30)
    assert (ev["actual_offset"], ev["expected_offset"]) == (2, 256)
    assert "`r0` = 2 (line 24: `r0 = R // P`); it should start at 256" in f.message
    assert [(r.line, r.message) for r in f.related][:2] == [(30, "store writing [2:46, 0:64]"),
                                                           (21, "the store that wrote those elements first")]
    x2, y2 = rng.standard_normal((2, 256, 64)).astype(F32)
    assert run("new_tail_offset.py", x2, y2).findings == []


def test_overlapping_windows_are_sim118_but_init_and_read_modify_write_are_not():
    x = rng.standard_normal((128, 1408)).astype(F32)
    res = run("new_store_overlap.py", x)
    assert sorted((f.rule, f.line) for f in res.findings) == expected_markers("new_store_overlap.py")
    f = res.findings[0]
    assert (f.rule, f.category, f.severity.value) == ("SIM118", "indexing-error", "warning")
    ev = f.evidence
    assert ev["overwritten_elements"] == 2 * 128 * 64 and ev["first_index"] == [0, 448]
    assert (ev["actual_step"], ev["expected_step"], ev["offset_expression"]) == (448, 512, "n * STEP")
    assert "overlap by 64" in f.message


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the kernel computes inf * 0 on purpose
def test_sanitizer_names_the_first_fault_not_the_store():
    x = rng.standard_normal((128, 256)).astype(F32)
    res = run("new_nan_origin.py", x, 100.0)
    assert res.findings == []
    (fault,) = res.provenance.faults
    assert (fault.line, fault.op, fault.kind) == (18, "activation", "nonfinite")
    with np.errstate(over="ignore"):
        expected_inf = int(np.isinf(np.exp((x * F32(100.0)).astype(F32))).sum())
    assert fault.inf == expected_inf > 0 and fault.nan == 0
    (rec,) = res.provenance.outputs[0].records
    assert (rec.line, rec.fault) == (22, 0)
    assert np.isnan(res.outputs[0]).any()
    # a finite run never starts the sanitizer
    assert run("new_nan_origin.py", x, 1.0).provenance.faults == []


def test_sanitizer_reports_fp8_cast_overflow_with_the_dtype_maximum():
    x = rng.standard_normal((128, 256)).astype(F32)
    amax = np.abs(x).max(axis=1, keepdims=True)
    res = run("legacy_fp8_scale.py", x, amax)
    (fault,) = res.provenance.faults
    raw = x * ((F32(1.0) / amax).astype(F32) * F32(448.0))
    assert (fault.line, fault.kind, fault.dtype, fault.dtype_max) == (18, "overflow", "float8_e4m3", 240.0)
    assert fault.out_of_range == int((np.abs(raw) > 240).sum()) > 0
    assert fault.max_abs == pytest.approx(448.0, rel=1e-6)
    assert "largest finite value 240" in fault.describe()


def test_integer_saturation_is_a_saturated_fault_in_a_sanitized_run():
    x = rng.standard_normal((128, 64)).astype(F32)
    res = run("legacy_int8_saturate.py", x, sanitize=True)
    (fault,) = res.provenance.faults
    assert (fault.line, fault.kind, fault.saturated, fault.dtype_max) == (13, "overflow", True, 127.0)
    r = np.rint(x * F32(100.0))
    assert fault.out_of_range == int(((r > 127) | (r < -128)).sum()) > 0
    assert "saturates int8" in fault.describe()
    assert run("legacy_int8_saturate.py", x).provenance.faults == []  # finite output: no second run


def test_intended_minus_inf_mask_is_no_fault_when_the_output_is_finite():
    x = rng.standard_normal((128, 256)).astype(F32)
    res = run("new_masked_softmax.py", x)
    assert res.findings == [] and res.provenance.faults == [] and np.isfinite(res.outputs[0]).all()
    # forced sanitizer: the -inf fill is recorded, nothing reaches the output
    forced = run("new_masked_softmax.py", x, sanitize=True)
    assert [f.line for f in forced.provenance.faults] == [14]
    assert all(r.fault is None for r in forced.provenance.outputs[0].records)


def test_a_mask_built_from_an_arange_keeps_it_affine():
    """`i_p < rem` computes the arange's values; later `x[r0 + i_p, i_f]` must still be a strided slice
    (one DMA descriptor per partition), not a gather of single elements."""
    from nki_assist.sim.indexing import Idx

    i_p = Idx.arange(128)[:, None]
    _ = i_p < 44
    assert (i_p + 256).single_axis() == (256, 1, 128, 0)
    x, y = rng.standard_normal((2, 300, 64)).astype(F32)
    res = run("legacy_tail_offset.py", x, y)
    tail = [t for t in res.trace if t.engine == "dma" and t.line in (21, 23)]
    # one descriptor per partition that moves (the 44 rows the mask keeps), not one per element
    assert [(t.line, t.transfers) for t in tail] == [(21, 44), (23, 44)]


def test_nan_from_an_uninitialized_accumulator_is_no_fault():
    x = rng.standard_normal((128, 1024)).astype(F32)
    res = run("new_uninit_acc.py", x)
    assert sorted((f.rule, f.line) for f in res.findings) == expected_markers("new_uninit_acc.py")
    assert np.isnan(res.outputs[0]).all()
    # the sanitizer ran (a store wrote NaN) and traced the NaN to never-written memory, not to the add
    assert res.provenance.faults == []
    assert [(r.line, r.fault) for r in res.provenance.outputs[0].records] == [(20, None)]
