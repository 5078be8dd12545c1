"""Planted defects are reported by the right SIM rule on the right kernel line, and nothing else."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from sim_helpers import expected_markers, fixture

from nki_assist.api.hardware import get_target
from nki_assist.sim import run_kernel

BF16 = ml_dtypes.bfloat16
F32 = np.float32
rng = np.random.default_rng(7)

# fixture -> (args, the rule literal the defect must raise, expected run status)
CASES = {
    "defect_partition_256.py": (lambda: [rng.standard_normal((512, 256)).astype(F32)], "SIM101", "ok"),
    "defect_psum_1024.py": (lambda: [rng.standard_normal((256, 128)).astype(BF16),
                                     rng.standard_normal((256, 1024)).astype(BF16)], "SIM102", "ok"),
    "defect_sbuf_budget.py": (lambda: [np.ones((128, 32768), F32), np.ones((128, 32768), F32)], "SIM104", "ok"),
    "defect_carried.py": (lambda: [rng.standard_normal((128, 2048)).astype(F32)], "SIM110", "ok"),
    "defect_write_conflict.py": (lambda: [rng.standard_normal((384, 64)).astype(F32)], "SIM109", "ok"),
    "defect_output_tail.py": (lambda: [rng.standard_normal((300, 64)).astype(F32), 2.0], "SIM112", "ok"),
    "defect_bf16_sum.py": (lambda: [rng.standard_normal((128, 4096)).astype(F32), BF16], "SIM116", "ok"),
    "defect_misc.py": (lambda: [rng.standard_normal((300, 64)).astype(F32)], "SIM103", "ok"),
    "new_dtype_defect.py": (lambda: [rng.standard_normal((128, 128)).astype(BF16),
                                     rng.standard_normal((128, 512)).astype(BF16)], "SIM107", "ok"),
    "new_defect_partition_256.py": (lambda: [rng.standard_normal((512, 64)).astype(F32)], "SIM101", "ok"),
    "new_defect_psum_1024.py": (lambda: [rng.standard_normal((256, 128)).astype(BF16),
                                         rng.standard_normal((256, 2048)).astype(BF16)], "SIM102", "ok"),
    "new_defect_sbuf_budget.py": (lambda: [np.ones((256, 32768), F32), np.ones((256, 32768), F32)], "SIM104",
                                  "ok"),
    "new_defect_bf16_sum.py": (lambda: [rng.standard_normal((128, 1024)).astype(F32), BF16], "SIM116", "ok"),
    "error_raises.py": (lambda: [np.ones((128, 4), F32)], "SIM114", "kernel-error"),
    "error_shape.py": (lambda: [np.ones((128, 512), F32)], "SIM113", "kernel-error"),
    "error_unsupported.py": (lambda: [np.ones((32, 32), F32)], "SIM117", "unsupported"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_defect_reported_on_its_line(name):
    make_args, rule, status = CASES[name]
    res = run_kernel(fixture(name), None, make_args(), target=get_target("trn2"))
    assert res.status == status, res.error
    got = sorted((f.rule, f.line) for f in res.findings)
    assert got == expected_markers(name)
    assert rule in {r for r, _ in got}
    for f in res.findings:
        assert f.source == "simulation" and f.file == fixture(name)
        assert f.message and f.fix
        json.dumps(f.to_json())  # evidence is plain JSON (no numpy scalars)
    if status != "ok":
        assert res.error and res.error_line == next(line for r, line in got if r == rule)


def test_defect_misc_covers_oob_uninitialized_and_placement():
    res = run_kernel(fixture("defect_misc.py"), None, [np.ones((300, 64), F32)], target=get_target("trn2"))
    by_rule = {f.rule: f for f in res.findings}
    assert {"SIM108", "SIM111", "SIM106", "SIM103"} <= set(by_rule)
    assert by_rule["SIM108"].evidence["out_of_bounds_elements"] == (384 - 300) * 64
    assert by_rule["SIM111"].evidence["uninitialized_elements"] == 128 * 64
    assert by_rule["SIM103"].evidence["live_banks"] == 9
    # the rows inside the tensor are still copied
    np.testing.assert_array_equal(res.outputs[0], np.ones((300, 64), F32))


def test_output_tail_evidence_names_the_unwritten_rows():
    res = run_kernel(fixture("defect_output_tail.py"), None, [np.ones((300, 64), F32), 2.0],
                     target=get_target("trn2"))
    (f,) = res.findings
    assert f.rule == "SIM112" and f.evidence["unwritten_elements"] == 44 * 64
    assert "[256:300, 0:64]" in f.message
    # located at the loop that stops one tile short, with the store and the allocation as related lines
    assert (f.line, f.category) == (11, "missing-boundary-mask")
    assert {k: f.evidence[k] for k in ("store_line", "loop_var", "trip_count", "needed_trip_count", "tile_extent")} == {
        "store_line": 15, "loop_var": "i", "trip_count": 2, "needed_trip_count": 3, "tile_extent": 128}
    assert [(r.line, r.message) for r in f.related] == [(15, "store that stops short"), (10, "out allocated here")]
    assert f.fix == ("Run the loop over `i` (line 11) 3 times (a ceiling division) and mask or clamp the last tile "
                     "to the remaining 44 elements, or add a separate tail tile at offset 256.")
    recs = res.provenance.outputs[0].records
    assert [(r.line, r.iteration, r.box) for r in recs] == [(15, (("i", 0),), ((0, 128), (0, 64))),
                                                           (15, (("i", 1),), ((128, 256), (0, 64)))]
    assert np.isnan(res.outputs[0][256:]).all() and (res.outputs[0][:256] == 2.0).all()


def test_bf16_running_sum_loses_accuracy_fp32_does_not():
    x = rng.standard_normal((128, 4096)).astype(F32) + 0.5
    ref = x.astype(np.float64).sum(axis=1, keepdims=True)
    bad = run_kernel(fixture("defect_bf16_sum.py"), None, [x, BF16], target=get_target("trn2"))
    good = run_kernel(fixture("defect_bf16_sum.py"), None, [x, F32], target=get_target("trn2"))
    assert [f.rule for f in bad.findings] == ["SIM116"] and good.findings == []
    err_bad = np.abs(bad.outputs[0] - ref).max()
    err_good = np.abs(good.outputs[0] - ref).max()
    assert err_good < 1e-2 < err_bad


def test_carried_dependency_is_clean_with_sequential_range(tmp_path):
    src = open(fixture("defect_carried.py")).read().replace("for j in nl.affine_range", "for j in nl.sequential_range")
    path = tmp_path / "fixed.py"
    path.write_text(src)
    x = rng.standard_normal((128, 2048)).astype(F32)
    res = run_kernel(str(path), None, [x], target=get_target("trn2"))
    assert res.status == "ok" and res.findings == []
    np.testing.assert_allclose(res.outputs[0], x.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-4)


def test_torch_import_loads_and_only_fails_where_used():
    x = np.ones((32, 32), F32)
    ok = run_kernel(fixture("torch_import.py"), "double", [x], target=get_target("trn2"))
    assert ok.status == "ok" and ok.findings == []
    np.testing.assert_array_equal(ok.outputs[0], 2 * x)
    assert any("torch" in n for n in ok.notes)
    bad = run_kernel(fixture("torch_import.py"), "uses_torch", [x], target=get_target("trn2"))
    assert bad.status == "unsupported"
    assert [(f.rule, f.line) for f in bad.findings] == expected_markers("torch_import.py")
    assert "torch.relu" in bad.findings[0].message


def test_strict_mode_stops_at_first_violation():
    args = [rng.standard_normal((300, 64)).astype(F32)]
    res = run_kernel(fixture("defect_misc.py"), None, args, target=get_target("trn2"), lenient=False)
    assert res.status == "kernel-error"
    assert [(f.rule, f.line) for f in res.findings] == [("SIM108", 11)]
    assert res.error_line == 11


def test_repeated_violation_is_one_finding_with_a_count():
    res = run_kernel(fixture("defect_partition_256.py"), None, [np.ones((1024, 64), F32)],
                     target=get_target("trn2"))
    (f,) = res.findings
    assert f.rule == "SIM101" and f.evidence["occurrences"] == 4 and f.evidence["partitions"] == 256


@pytest.mark.parametrize("name", ["defect_partition_reduce.py", "new_partition_reduce.py"])
def test_partition_axis_reduction_is_an_error_and_the_ones_matmul_is_clean(name):
    x = rng.standard_normal((128, 512)).astype(F32)
    bad = run_kernel(fixture(name), None, [x], target=get_target("trn2"))
    assert sorted((f.rule, f.line) for f in bad.findings) == expected_markers(name)
    (f,) = bad.findings
    assert (f.rule, f.severity.value, f.category) == ("SIM119", "error", "unsupported-construct")
    assert f.evidence["axis"] == [0] and f.evidence["shape"] == [128, 512]
    good = run_kernel(fixture("ones_matmul_col_sums.py"), None, [x], target=get_target("trn2"))
    assert good.status == "ok" and good.findings == []
    assert np.allclose(good.outputs[0], x.sum(axis=0, keepdims=True), rtol=1e-4, atol=1e-4)
