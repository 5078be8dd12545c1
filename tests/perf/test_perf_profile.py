"""Profile summary ingestion: formats, tolerance, merge with the estimate, PROF1xx findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from nki_assist.api.hardware import get_target
from nki_assist.perf import (ProfileError, estimate, load_profile, merge_profile, profile_findings,
                             render_plots, to_performance)
from nki_assist.perf import synth

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "perf"
TRN1 = get_target("trn1")


def test_load_summary_list_format():
    prof = load_profile(str(FIX / "profile_matmul_optimized.json"))
    assert prof.kernel_name == "nki_matmul_fully_optimized_"
    assert prof.total_time_s == pytest.approx(0.00697)
    assert prof.get("mfu_estimated_percent") == 85.24 and prof.get("hbm_read_bytes") == 671088640
    assert prof.notes == []


def test_load_keyed_by_name_with_bad_values():
    prof = load_profile(str(FIX / "profile_attention_bad.json"))
    assert prof.kernel_name == "attention_fwd.neff"
    assert prof.total_time_s == pytest.approx(1840.5e-6)  # total_time_us converted
    assert prof.get("hbm_write_bytes") == 16777216  # numeric string accepted
    assert prof.get("dma_active_time_percent") is None
    assert any("dma_active_time_percent" in n and "not a number" in n for n in prof.notes)
    assert len(prof.insights) == 2


def test_partial_profile_keeps_unknown_keys_and_notes_missing():
    prof = load_profile(str(FIX / "profile_partial.json"))
    assert prof.extra == {"custom_counter": 7}
    assert any("mfu_estimated_percent" in n for n in prof.notes)
    assert profile_findings(prof) == []


@pytest.mark.parametrize("name,needle", [
    ("profile_truncated.json", "not valid JSON"),
    ("profile_unknown.json", "no known profile metric"),
    ("does_not_exist.json", "not found"),
])
def test_bad_files_raise_clear_errors(name, needle):
    with pytest.raises(ProfileError) as err:
        load_profile(str(FIX / name))
    assert needle in str(err.value) and name in str(err.value)


def test_non_object_json(tmp_path):
    p = tmp_path / "list.json"
    p.write_text("[1, 2, 3]")
    with pytest.raises(ProfileError, match="expected a JSON object"):
        load_profile(str(p))


def test_merge_measured_replaces_estimate_side_by_side():
    est = estimate(synth.matmul_block_free(512, 512, 1024).run(), TRN1)
    prof = load_profile(str(FIX / "profile_matmul_optimized.json"))
    merged = merge_profile(est, prof, kernel_name="nki_matmul_fully_optimized_")
    assert est.measured is None  # the input estimate is untouched
    perf = to_performance(merged).model_dump(mode="json")
    assert perf["mfu_estimated_percent"] == 85.24
    assert perf["estimated_mfu_percent"] == pytest.approx(est.mfu_percent, abs=0.01)
    assert perf["hbm_read_bytes"] == 671088640
    assert perf["measured_time_us"] == pytest.approx(6970.0)
    # engine busy from percent x total_time, estimate kept next to it
    tensor = perf["engines"]["tensor"]
    assert tensor["busy_us"] == pytest.approx(0.931 * 6970.0, rel=1e-3)
    assert tensor["estimated_busy_us"] == pytest.approx(est.busy_s["tensor"] * 1e6, rel=1e-3)
    rows = {r["metric"]: r for r in perf["comparison"]}
    assert rows["time_us"]["measured"] == pytest.approx(6970.0)
    assert rows["time_us"]["estimate"] == pytest.approx(est.estimated_time_us)
    assert rows["hfu_percent"]["measured"] == 85.24
    assert "engines.png" in render_plots(merged)


def test_merge_name_mismatch_is_noted_and_not_trusted():
    est = estimate(synth.matmul_block_free(512, 512, 1024).run(), TRN1)
    prof = load_profile(str(FIX / "profile_attention_bad.json"))
    merged = merge_profile(est, prof, kernel_name="nki_matmul_fully_optimized_")
    assert any("not 'nki_matmul_fully_optimized_'" in n for n in merged.notes)
    perf = to_performance(merged).model_dump(mode="json")
    assert perf["mfu_estimated_percent"] == pytest.approx(est.mfu_percent, abs=0.01)  # not replaced
    assert perf["measured"]["kernel_mismatch"] is True and perf["measured"]["mfu_estimated_percent"] == 22.4


def test_profile_findings_fire_on_bad_profile():
    prof = load_profile(str(FIX / "profile_attention_bad.json"))
    fs = {f.rule: f for f in profile_findings(prof, file="attn.py")}
    assert set(fs) == {"PROF101", "PROF102", "PROF103", "PROF104"}
    spill = fs["PROF101"]
    assert spill.evidence["value"] == pytest.approx(100 * (402653184 + 603979776) / (1610612736 + 1207959552), abs=0.1)
    assert spill.source == "profile" and spill.file == "attn.py" and spill.evidence["measured"] is True
    assert fs["PROF102"].evidence["value"] == pytest.approx(25.0)
    assert fs["PROF103"].evidence["value"] == pytest.approx(20.0, abs=0.1)
    assert fs["PROF104"].evidence["value"] == 38.0 and fs["PROF104"].est_speedup == pytest.approx(2.63, abs=0.01)
    for f in fs.values():
        assert f.evidence["confirm_with"]["metric"]


def test_profile_findings_quiet_on_good_profile():
    prof = load_profile(str(FIX / "profile_matmul_optimized.json"))
    assert profile_findings(prof) == []
