"""`simulate --profile`: estimate and measured side by side, profile findings, bad profiles are usage errors."""

from __future__ import annotations

import json
from pathlib import Path

from nki_assist.cli import main

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "gemm_bias_relu" / "port.toml"
PROFILE = ROOT / "tests" / "fixtures" / "perf" / "profile_attention_bad.json"


def test_simulate_with_profile_json(capsys):
    code = main(["simulate", str(SPEC), "--size", "aligned", "--format", "json", "--profile", str(PROFILE),
                 "--fail-on", "never"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    perf = doc["performance"]
    assert perf["size"] == "aligned" and perf["estimated_time_us"] > 0
    assert perf["measured"]["source"].endswith("profile_attention_bad.json")
    rows = {r["metric"]: r for r in perf["comparison"]}
    assert rows["time_us"]["measured"] == 1840.5  # total_time_us of the fixture
    assert abs(rows["time_us"]["estimate"] - perf["estimated_time_us"]) < 1e-2
    rules = {f["rule"] for f in doc["findings"]}
    assert rules & {"PROF101", "PROF102", "PROF103", "PROF104"}, rules


def test_simulate_bad_profile_is_usage_error(tmp_path, capsys):
    bad = tmp_path / "p.json"
    bad.write_text("{not json")
    assert main(["simulate", str(SPEC), "--profile", str(bad)]) == 2
    assert "p.json" in capsys.readouterr().err
