"""Every check family runs through rules/runner.py: a crashing check becomes one internal-error finding that
names it, and the other checks of the family still report (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nki_assist.findings import Finding, Severity
from nki_assist.api.hardware import get_target
from nki_assist.parse.cuda import parse_cuda
from nki_assist.parse.nki import parse_nki
from nki_assist.perf import estimate, perf_findings, synth
from nki_assist.perf import findings as perf_checks
from nki_assist.rules.cuda import checks as cuda_rules
from nki_assist.rules.migration import checks as migration
from nki_assist.rules.nki import common as nki_common
from nki_assist.rules.cuda.checks import run_cuda_rules
from nki_assist.rules.migration.checks import run_migration_rules
from nki_assist.rules.nki.run import run_nki_rules
from nki_assist.rules.registry import get
from nki_assist.rules.runner import Check, CheckSet

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gemm_bias_relu"
TRN1, TRN2 = get_target("trn1"), get_target("trn2")


def _raiser(name: str):
    def fn(*_args):
        raise RuntimeError("synthetic failure")

    fn.__name__ = name  # the crash finding must name the check that broke
    return fn


def _break(monkeypatch, checks: CheckSet, name: str) -> None:
    """Replace the check called `name` with one that raises (same rule ids, same place in the order)."""
    assert name in [c.name for c in checks.checks]
    monkeypatch.setattr(checks, "checks", [Check(c.rules, _raiser(name)) if c.name == name else c for c in checks.checks])


def _crash(findings: list[Finding]) -> Finding:
    crashes = [f for f in findings if "synthetic failure" in f.message]
    assert len(crashes) == 1, [f.message for f in findings]
    f = crashes[0]
    assert f.severity is Severity.INFO and f.confidence == "low"
    return f


def _ports():
    cf = parse_cuda((EXAMPLE / "sgemm_bias_relu.cu").read_text(), "sgemm_bias_relu.cu")
    nf = parse_nki((EXAMPLE / "gemm_bias_relu_nki.py").read_text(), "gemm_bias_relu_nki.py")
    return cf, nf


def test_migration_family(monkeypatch):
    cf, nf = _ports()
    before = {f.rule for f in run_migration_rules(cf, nf, TRN2)}
    assert {"MIG101", "MIG108", "MIG109"} <= before
    _break(monkeypatch, migration.CHECKS, "_bounds")  # MIG101
    findings = run_migration_rules(cf, nf, TRN2)
    crash = _crash(findings)
    assert crash.rule == "MIG101" and crash.evidence["check"] == "_bounds" and "_bounds" in crash.message
    assert {"MIG108", "MIG109"} <= {f.rule for f in findings if f is not crash}


def test_cuda_family(monkeypatch):
    text = (EXAMPLE / "sgemm_bias_relu.cu").read_text()
    text += "\n__global__ void f(float* y) { y[threadIdx.x] = __expf(1.0f); }\n"
    _break(monkeypatch, cuda_rules.CHECKS, "cuda103_float_atomics")
    findings = run_cuda_rules(parse_cuda(text, "x.cu"), TRN2)
    crash = _crash(findings)
    assert crash.rule == "CUDA103" and crash.evidence["check"] == "cuda103_float_atomics"
    assert {"CUDA104", "CUDA106"} <= {f.rule for f in findings}


def test_nki_family(monkeypatch):
    _, nf = _ports()
    before = {f.rule for f in run_nki_rules(nf, TRN2)}
    victim = next(c for c in nki_common.CHECKS.checks if "NKI301" in c.rules)
    _break(monkeypatch, nki_common.CHECKS, victim.name)
    findings = run_nki_rules(nf, TRN2)
    crash = _crash(findings)
    assert crash.rule == "NKI001" and crash.evidence["check"] == victim.name and "NKI301" in crash.message
    assert before - {"NKI301"} <= {f.rule for f in findings}


def test_perf_family(monkeypatch):
    run = synth.matmul_tiled(1024, 1024, 1024).run()
    fs = perf_findings(estimate(run, TRN1), run, TRN1)
    assert {"PERF101", "PERF102"} <= {f.rule for f in fs}
    _break(monkeypatch, perf_checks.CHECKS, "redundant_dma")
    est = estimate(run, TRN1)
    findings = perf_findings(est, run, TRN1)
    crash = _crash(findings)
    assert crash.rule == "PERF101" and crash.evidence["check"] == "redundant_dma"
    assert "PERF102" in {f.rule for f in findings if f is not crash}
    assert any("synthetic failure" in n for n in est.notes)
    assert "PERF101" not in [r["rule"] for r in est.ranking]  # a crash is not ranked as a gain


@pytest.mark.parametrize("checks", [nki_common.CHECKS, cuda_rules.CHECKS, migration.CHECKS, perf_checks.CHECKS],
                         ids=lambda c: c.family)
def test_every_check_names_registered_rules(checks):
    """A check registers only rule ids the registry knows."""
    assert checks.checks
    for c in checks.checks:
        for rid in c.rules:
            assert get(rid).id == rid
