"""`nki-assist check` on CUDA files: findings with 1-based lines and the facts per kernel in JSON."""

from __future__ import annotations

import json
from pathlib import Path

from nki_assist.cli import main

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def test_check_json_exposes_cuda_facts_and_findings(capsys, tmp_path):
    gemm = FIX / "rules" / "CUDA102" / "pos_tiled_gemm_missing_second_sync.cu"
    code = main(["check", "--no-config", "--format", "json", "--fail-on", "never", str(gemm)])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    rules = sorted((f["rule"], f["line"]) for f in report["findings"])
    assert rules == [("CUDA102", 14), ("CUDA102", 15)]
    [facts] = report["cuda"].values()
    [kernel] = facts["kernels"]
    assert kernel["name"] == "sgemm_tiled" and kernel["syncthreads"] == [16]
    assert [s["bytes"] for s in kernel["shared"]] == [1024, 1024]
    assert kernel["accumulators"] == [{"name": "acc", "dtype": "float", "line": 18}]
    assert kernel["loops"][1]["unroll"] is True and kernel["loops"][1]["trip_count"] == 16


def test_check_cuda_suppression_and_fail_on(capsys):
    path = FIX / "rules" / "CUDA106" / "pos_unguarded_stores.cu"
    assert main(["check", "--no-config", "--fail-on", "warning", str(path)]) == 1
    out = capsys.readouterr().out
    assert "pos_unguarded_stores.cu:4:5: CUDA106" in out
    assert main(["check", "--no-config", "--fail-on", "warning", "--ignore", "CUDA106", str(path)]) == 0
