"""One defect reported by several stages becomes one assessment item, led by the majority category."""

from nki_assist.feedback.drafter import _primary, group_findings
from nki_assist.findings import Finding, prioritize
from nki_assist.review.pipeline import _link_root_causes


def F(rule, cat, line, sev="error", file="k_nki.py"):
    return Finding(rule=rule, name=rule.lower(), category=cat, severity=sev, message="m", file=file, line=line)


def test_partly_written_output_and_ragged_failure_are_one_item():
    fs = [F("SIM112", "uninitialized-read", 24), F("NUM103", "missing-boundary-mask", 26),
          F("NKI203", "missing-boundary-mask", 26, "warning"), F("PERF101", "redundant-dma", 35, "warning")]
    linked = prioritize(_link_root_causes(fs))
    groups = group_findings(linked)
    assert sorted(sorted(f.rule for f in g) for g in groups) == [["NKI203", "NUM103", "SIM112"], ["PERF101"]]
    tail = next(g for g in groups if any(f.rule == "NUM103" for f in g))
    assert _primary(tail).rule == "NUM103"  # the item is titled after the tail, not the unwritten output


def test_no_link_without_a_ragged_attribution():
    fs = [F("SIM112", "uninitialized-read", 24), F("NKI203", "missing-boundary-mask", 26, "warning")]
    assert all("root_cause" not in f.evidence for f in _link_root_causes(fs))


def test_static_and_cost_model_utilization_findings_are_one_item():
    s = F("NKI303", "partition-underutilized", 20, "warning")
    c = F("PERF103", "partition-underutilized", 34, "warning").model_copy(update={"source": "cost-model"})
    other = F("PERF101", "redundant-dma", 35, "warning").model_copy(update={"source": "cost-model"})
    groups = group_findings(prioritize(_link_root_causes([s, c, other])))
    assert sorted(sorted(f.rule for f in g) for g in groups) == [["NKI303", "PERF103"], ["PERF101"]]
