"""The severity policy (rules/policy.py, issue 41): every rule names a kind, declares every severity its checks
give, each allowed by its kind; every finding the rule fixtures (and, where present, a public corpus) draw keeps
to its rule's declaration; static performance findings are info; each docs page states the policy."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from test_rule_fixtures import FIXTURES, SUFFIXES, run_rules  # tests/rules is on sys.path

from nki_assist.findings import Severity
from nki_assist.rules import policy
from nki_assist.rules.registry import all_rules, get, page

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpora" / "nki-samples@6905a68"


def _crash(f) -> bool:  # a crashed check's info finding carries the rule id of the check (rules/runner.py)
    ev = f.evidence if isinstance(f.evidence, dict) else {}
    return bool(ev.get("check") and ("exception" in ev or "internal_error" in ev))


def test_every_rule_declares_severities_its_kind_allows():
    bad = []
    for spec in all_rules():
        assert spec.kind in policy.KINDS, spec.id
        for sev in spec.severities:
            if sev not in policy.allowed(spec.kind):
                bad.append(f"{spec.id} ({spec.kind}) gives {sev.value}")
    assert not bad, bad


def test_performance_categories_are_never_errors_and_static_ones_are_info_by_default():
    for spec in all_rules():
        if spec.category in policy.PERFORMANCE_CATEGORIES:
            assert Severity.ERROR not in spec.severities, spec.id
            if spec.source in ("static", "migration"):
                assert spec.severity is Severity.INFO and spec.kind == "performance", spec.id


def _observed(findings, seen: dict) -> list[str]:
    bad = []
    for f in findings:
        if _crash(f):
            continue
        spec = get(f.rule)
        seen[f.rule].add(f.severity)
        if f.severity not in spec.severities:
            bad.append(f"{f.rule} gave {f.severity.value} at {f.file}:{f.line}; declared {spec.severities}")
        why = policy.finding_problem(spec.kind, f.severity, f.est_speedup, f.evidence, f.message)
        if why:
            bad.append(f"{f.rule} at {f.file}:{f.line}: {why}")
    return bad


def test_every_fixture_finding_keeps_to_its_rules_policy():
    seen: dict[str, set] = defaultdict(set)
    bad = []
    for d in sorted(FIXTURES.iterdir()):
        for path in sorted(d.iterdir()) if d.is_dir() else ():
            if path.suffix in SUFFIXES:
                bad += _observed(run_rules(path), seen)
    assert not bad, bad[:20]
    # the fixtures exercise the declared extra severities of the rules this issue changed
    assert seen["NKI203"] >= {Severity.ERROR, Severity.WARNING, Severity.INFO}
    assert seen["NKI103"] >= {Severity.ERROR, Severity.INFO}
    assert seen["NKI004"] >= {Severity.WARNING, Severity.INFO}


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"public corpus not present: {CORPUS}")
def test_a_public_corpus_keeps_to_the_policy():
    out = subprocess.run([sys.executable, "-m", "nki_assist", "check", "--format", "json", "--no-cache", "."],
                         cwd=CORPUS, capture_output=True, text=True)
    from nki_assist.findings import Finding

    findings = [Finding.model_validate(f) for f in json.loads(out.stdout)["findings"]]
    assert findings
    assert not _observed(findings, defaultdict(set))


def test_every_docs_page_states_the_policy():
    for spec in all_rules():
        text = page(spec)
        assert "## Severity policy" in text, spec.id
        assert f"Kind: {spec.kind} (gives " in text and policy.statement(spec.kind) in text, spec.id


def test_a_finding_that_breaks_the_policy_is_named():
    assert policy.finding_problem("performance", Severity.WARNING, None, {}, "x") is not None
    assert policy.finding_problem("performance", Severity.WARNING, 2.1, {}, "up to 2.10x") is None
    assert policy.finding_problem("defect", Severity.ERROR, None, {}, "x") is not None
    # a cost-model warning needs its estimated gain
    assert policy.finding_problem("bound", Severity.WARNING, None, {}, "slow") is not None
    assert policy.finding_problem("bound", Severity.WARNING, 1.8, {}, "1.80x faster") is None
    assert policy.finding_problem("bound", Severity.WARNING, None, {"measured": True}, "42% of traffic") is None


FP32_KERNEL = '''
import nki
import nki.language as nl
import nki.isa as nisa


@nki.jit
def fp32_gemm(lhsT, rhs):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for k in range(8):
        a = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        b = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=lhsT[k * 128:(k + 1) * 128, 0:128])
        nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, 0:512])
        ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=a, moving=b)
    return out
'''


def test_an_fp32_kernel_gets_a_note_not_a_warning(tmp_path):
    from nki_assist.check import CheckOptions, check_text

    found = [f for f in check_text(str(tmp_path / "k.py"), FP32_KERNEL, CheckOptions()).findings
             if f.rule == "NKI302"]
    assert [f.severity for f in found] == [Severity.INFO]
    assert "4x slower" in found[0].message


def test_a_static_cost_becomes_a_warning_only_where_the_cost_model_binds_it():
    from nki_assist.findings import Finding
    from nki_assist.review.stage_links import link_stages

    def static(rule, line, **ev):
        spec = get(rule)
        return spec.finding("small", file="k.py", line=line, evidence=ev)

    bound = Finding(rule="PERF101", name=get("PERF101").name, category="redundant-dma", severity=Severity.WARNING,
                    source="cost-model", file="k.py", line=24, message="reloads; 1.90x", est_speedup=1.9)
    out = link_stages([static("NKI108", 24), static("NKI108", 30), static("NKI108", 24, advice=True),
                       static("NKI301", 40, one_off=True), bound])
    sev = [(f.rule, f.line, f.severity.value, f.est_speedup) for f in out[:4]]
    assert sev == [("NKI108", 24, "warning", 1.9), ("NKI108", 30, "info", None), ("NKI108", 24, "info", None),
                   ("NKI301", 40, "info", None)]
    assert "up to 1.90x" in out[0].message
    assert policy.finding_problem("performance", out[0].severity, out[0].est_speedup, out[0].evidence,
                                  out[0].message) is None
