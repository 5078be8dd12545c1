"""Numerics scenarios come from one ordered registry (numerics/registry.py): run_scenarios, the Review JSON
matrix and the report's scenario columns all follow it, and a new scenario is one entry (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nki_assist.api.hardware import get_target
from nki_assist.numerics import registry
from nki_assist.numerics.registry import GPU_MODEL, TRAINIUM, TRAINIUM_FP32, TRAINIUM_SR, Scenario, kernel_scenarios
from nki_assist.numerics.scenarios import matrix_rows, run_scenarios
from nki_assist.numerics.spec import load_spec
from nki_assist.report.sections import SCENARIO_ORDER
from nki_assist.rules.registry import get
from nki_assist.toolchain.builtin import BuiltinBackend

PORT = Path(__file__).resolve().parents[1] / "fixtures" / "ports" / "rev_rowsum_bf16" / "port.toml"


def test_order_and_options():
    assert [s.name for s in registry.SCENARIOS] == ["trainium", "trainium-fp32", "trainium-sr", "gpu-model"]
    assert SCENARIO_ORDER == [s.name for s in registry.SCENARIOS]
    assert kernel_scenarios() == [TRAINIUM, TRAINIUM_FP32]
    assert kernel_scenarios(stochastic=True) == [TRAINIUM, TRAINIUM_FP32, TRAINIUM_SR]
    assert not GPU_MODEL.is_kernel_run and TRAINIUM.traced and not TRAINIUM_FP32.traced
    assert registry.get("trainium-fp32") is TRAINIUM_FP32
    with pytest.raises(KeyError):
        registry.get("trainium-fp64")


def test_every_reporting_rule_exists():
    for s in registry.SCENARIOS:
        for rid in s.reported_by:
            assert get(rid).id.startswith("NUM")


def test_a_new_scenario_is_one_entry(monkeypatch):
    """Registering a scenario makes run_scenarios run it (in registry order), compare it with the reference and
    put it in the Review JSON matrix: no other file changes."""
    extra = Scenario("trainium-fp32-copy", "a second fp32-storage run", kernel_options={"precise": False})
    scenarios = list(registry.SCENARIOS)
    scenarios.insert(2, extra)
    monkeypatch.setattr(registry, "SCENARIOS", tuple(scenarios))
    spec = load_spec(PORT)
    res = run_scenarios(spec, target=get_target("trn2"), backend=BuiltinBackend(), sizes=["L512", "L2048"])
    assert res.scenarios == ["reference", "trainium", "trainium-fp32", "trainium-fp32-copy", "gpu-model"]
    for sr in res.sizes:
        assert list(sr.runs) == ["trainium", "trainium-fp32", "trainium-fp32-copy"]
        assert sr.runs["trainium-fp32-copy"].trace == []  # only the traced scenario records the trace
        assert sr.runs["trainium"].trace
        assert sr.passed("trainium-fp32-copy") == sr.passed("trainium-fp32") is True
        copy = sr.agreement("trainium-fp32-copy")[0]
        assert copy.max_abs == sr.agreement("trainium-fp32")[0].max_abs
    rows = [r for r in matrix_rows(res) if r["scenario"] == "trainium-fp32-copy"]
    assert {r["size"] for r in rows} == {"L512", "L2048"} and all(r["against"] == "reference" for r in rows)
