"""The Finding contract: taxonomy validation, JSON shape, priority order."""

import pytest
from pydantic import ValidationError

from nki_assist.findings import Finding, Severity, prioritize
from nki_assist.rules.registry import get


def make(**kw):
    base = dict(rule="X1", name="x", category="psum-bank-overflow", severity="warning", message="m")
    return Finding(**(base | kw))


def test_criterion_derived_and_checked():
    assert make().criterion == "memory-hierarchy"
    with pytest.raises(ValidationError):
        make(criterion="numerical-accuracy")
    with pytest.raises(ValidationError):
        make(category="no-such-category")


def test_json_has_contract_keys():
    d = make(line=3, column=5, evidence={"bytes_per_partition": 4096}).to_json()
    for key in ("id", "rule", "name", "category", "criterion", "severity", "source", "file", "line",
                "end_line", "column", "message", "evidence", "fix", "est_speedup", "confidence"):
        assert key in d
    assert d["severity"] == "warning" and d["end_line"] == 3


def test_prioritize_orders_severity_then_criterion_then_gain():
    fs = [
        make(severity="info", category="fp32-matmul"),
        make(severity="warning", category="small-dma", est_speedup=1.2),
        make(severity="warning", category="small-dma", est_speedup=3.0),
        make(severity="warning", category="missing-epilogue"),
        make(severity="error", category="partition-limit"),
    ]
    out = prioritize(fs)
    assert [f.id for f in out] == ["F1", "F2", "F3", "F4", "F5"]
    assert [f.category for f in out] == ["partition-limit", "missing-epilogue", "small-dma", "small-dma", "fp32-matmul"]
    assert out[2].est_speedup == 3.0
    assert Severity.ERROR.at_least(Severity.WARNING) and not Severity.INFO.at_least(Severity.WARNING)


def test_rulespec_builds_finding():
    f = get("NA100").finding("unused", file="k.py", line=4)
    assert f.rule == "NA100" and f.criterion == "review-hygiene" and f.fix
