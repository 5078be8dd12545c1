"""`nki-assist run` on public harnesses, run in place from ../shared/corpora (never copied)."""

from __future__ import annotations

import pytest
from run_helpers import CORPORA, run_cli

SAMPLES = CORPORA / "nki-samples@7af4e4d" / "src" / "nki_samples" / "tutorials"
NEW_SAMPLES = CORPORA / "nki-samples@6905a68" / "src" / "nki_samples" / "tutorials"

pytestmark = pytest.mark.skipif(not SAMPLES.is_dir() or not NEW_SAMPLES.is_dir(),
                                reason="needs the public corpora in ../shared/corpora")


def test_the_transpose_tutorial_runs_clean_and_passes_its_own_check():
    code, report, err = run_cli("--format", "json", "--", "python", "transpose2d_nki_kernels.py",
                                cwd=SAMPLES / "transpose2d")
    (launch,) = report["run"]["launches"]
    assert launch["status"] == "ok" and launch["call_site"].startswith("transpose2d_nki_kernels.py:")
    assert launch["arguments"] == "in_tensor: int8[5, 12], shape2D=[3, 4]"  # the harness's own arguments
    assert report["findings"] == [] and "exited with status 0" in report["run"]["program"] and code == 0
    assert "NKI and NumPy match" in err


def test_the_multi_core_spmd_tutorial_covers_its_whole_output():
    # nl.spmd_dim(grid_x, nl.nc(2)): 2 * grid_x programs along the axis; with grid_x alone half the
    # output stayed unwritten (a false SIM112) and the tutorial's own comparison failed
    code, report, err = run_cli("--format", "json", "--", "python", "spmd_multiple_nc_tensor_addition_nki_kernels.py",
                                cwd=NEW_SAMPLES / "tensor_addition")
    (launch,) = report["run"]["launches"]
    assert launch["grid"] == [4, 4] and launch["status"] == "ok"
    assert report["findings"] == [] and "NKI and NumPy match" in err and code == 0


def test_the_attention_test_script_runs_with_host_side_static_cast():
    code, report, _ = run_cli("--format", "json", "--", "python", "test_attention.py",
                              cwd=NEW_SAMPLES / "attention_fwd_performance")
    assert [x["kernel"] for x in report["run"]["launches"]] == ["attn_fwd_v1"]
    assert report["findings"] == [] and code == 0
