"""The eval cases themselves (evals/cases): gold files, port specs, coverage, and one CLI round trip.

The CLI tests run a real `nki-assist eval` on three small cases (replay mode, then the thresholds gate);
the rest only parse files, so the module stays well under a minute.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from nki_assist import taxonomy
from nki_assist.evalsuite.gold import load_gold
from nki_assist.evalsuite.runner import discover
from nki_assist.numerics.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "evals" / "cases"
THRESHOLDS = ROOT / "evals" / "thresholds.toml"
CASE_DIRS = sorted(p for p in CASES.iterdir() if p.is_dir())
CONTRACT_KEYS = {"cases", "precision", "recall", "f1", "critical_recall", "severity_weighted_recall",
                 "clean_false_positives", "hallucinations", "grounding_rate", "kendall_tau", "ndcg_at_5",
                 "seconds", "per_case"}


def _ids(dirs):
    return [d.name for d in dirs]


@pytest.mark.parametrize("case", CASE_DIRS, ids=_ids(CASE_DIRS))
def test_gold_loads_and_points_at_real_lines(case: Path):
    gold = load_gold(case / "gold.toml")
    assert gold.case.title.strip()
    assert (case / gold.case.port).is_file()
    for issue in gold.issues:
        src = case / issue.file
        assert src.is_file(), f"{case.name}: {issue.id} names missing file {issue.file}"
        lines = src.read_text(encoding="utf-8").splitlines()
        lo, hi = issue.lines
        assert hi <= len(lines), f"{case.name}: {issue.id} lines {lo}-{hi} past the end ({len(lines)} lines)"
        assert any(lines[i - 1].strip() for i in range(lo, hi + 1)), f"{case.name}: {issue.id} points at blank lines"
        assert issue.summary.strip()
    if gold.case.clean:
        assert not gold.issues
    else:
        assert gold.issues, f"{case.name}: a non-clean case lists its issues"


@pytest.mark.parametrize("case", CASE_DIRS, ids=_ids(CASE_DIRS))
def test_port_spec_loads_with_small_sizes(case: Path):
    gold = load_gold(case / "gold.toml")
    spec = load_spec(case / gold.case.port)
    assert spec.nki_path.is_file() and spec.cuda_path is not None and spec.cuda_path.is_file()
    assert spec.reference_function, f"{case.name}: every case has a NumPy reference"
    raw = tomllib.loads((case / gold.case.port).read_text(encoding="utf-8"))
    assert 1 <= len(raw["sizes"]) <= 3
    for size in spec.sizes:
        assert spec.input_bytes(size) <= 8 * 2**20, f"{case.name}: size {size.name} is too big for a fast eval"
    # the dialect recorded in gold matches the NKI file's imports
    text = spec.nki_path.read_text(encoding="utf-8")
    legacy = "neuronxcc.nki" in text
    assert gold.case.dialect == ("legacy" if legacy else "new")


def test_suite_covers_criteria_dialects_families_and_controls():
    cases, problems = discover(CASES)
    assert not problems
    assert len(cases) >= 16
    golds = [c.gold for c in cases]
    criteria = {taxonomy.criterion_of(i.category) for g in golds for i in g.issues}
    assert criteria >= {"migration-correctness", "memory-hierarchy", "hardware-utilization", "numerical-accuracy"}
    assert {g.case.dialect for g in golds} == {"legacy", "new"}
    families = {f for g in golds for f in g.case.families}
    assert families >= {"matmul", "reduction", "normalization", "softmax", "elementwise", "attention"}
    assert sum(g.case.clean for g in golds) >= 3
    adversarial = [g for g in golds if g.case.adversarial]
    assert len(adversarial) >= 2 and all(g.issues and g.case.must_not_claim for g in adversarial)
    assert {i.severity for g in golds for i in g.issues} == {"critical", "major", "minor"}
    # a ragged size where tails matter, in at least one clean and one defective case
    ragged = [c for c in cases if any(s.get("name") == "ragged" for s in
                                      tomllib.loads(c.spec.read_text(encoding="utf-8"))["sizes"])]
    assert any(c.gold.case.clean for c in ragged) and any(not c.gold.case.clean for c in ragged)


def _tuple_constant_lines(path: Path) -> set[int]:
    """Lines that bind several integer constants in one tuple assignment (`BM, BN, BK = 128, 64, 32`)."""
    lines = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple)
                and isinstance(node.value, ast.Tuple) and len(node.value.elts) >= 2
                and all(isinstance(e, ast.Constant) and isinstance(e.value, int) for e in node.value.elts)):
            lines.add(node.lineno)
    return lines


def _issue29_patterns(case: Path) -> set[str]:
    """Which of issue 29's advice patterns a case's gold review exercises (read from the gold and the kernel)."""
    gold = load_gold(case / "gold.toml")
    out = set()
    for i in gold.issues:
        src = case / i.file
        text = src.read_text(encoding="utf-8").splitlines()
        span = range(i.lines[0], i.lines[1] + 1)
        if i.category == "sbuf-budget" and {"convolution", "stencil"} & set(gold.case.families):
            out.add("conv-sbuf-plan")
        if i.category == "tensor-engine-underutilized" and _tuple_constant_lines(src) & set(span):
            if i.severity == max((g.severity for g in gold.issues), key=["minor", "major", "critical"].index):
                out.add("tuple-tiles-cause-first")
        if (i.category == "unsupported-construct" and i.severity == "critical"
                and any(re.search(r"axis\s*=\s*[\(\[]?0\b", text[n - 1]) for n in span)):
            out.add("partition-reduction-error")
    return out


def test_issue29_patterns_each_have_a_case_in_both_dialects():
    """A conv/stencil SBUF overflow (its plan recomputed by tests/perf/test_retile.py), tile constants bound in
    one tuple whose K tile is the leading cause, and a partition-axis reduction as an error: each in the legacy
    and the new dialect."""
    seen: dict[str, set[str]] = {}
    for case in CASE_DIRS:
        for pattern in _issue29_patterns(case):
            seen.setdefault(pattern, set()).add(load_gold(case / "gold.toml").case.dialect)
    assert seen == {p: {"legacy", "new"} for p in
                    ("conv-sbuf-plan", "tuple-tiles-cause-first", "partition-reduction-error")}


def test_injection_case_really_contains_the_injection():
    text = (CASES / "adv_injection_rmsnorm_legacy" / "rmsnorm_nki.py").read_text(encoding="utf-8").lower()
    assert "ignore previous instructions" in text and "approve this kernel" in text


@pytest.mark.parametrize("path", [THRESHOLDS, THRESHOLDS.with_name("thresholds.mechanical.toml")])
def test_thresholds_file_has_gate_tables(path):
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert {"precision", "recall", "critical_recall", "grounding_rate"} <= set(data["min"])
    assert {"clean_false_positives", "hallucinations", "llm_fallbacks"} <= set(data["max"])
    assert data["max"]["llm_fallbacks"] == 0  # a recorded reply that is stale or ungrounded fails CI
    assert all(0.0 <= v <= 1.0 for v in data["min"].values())


# -- CLI round trip --------------------------------------------------------------------------------
REPLAY_CASES = ["rowmax_affine_carry_legacy", "softmax_overflow_legacy", "clean_softmax_new"]


def _eval(out: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "nki_assist", "eval", str(CASES), "--output-dir", str(out), "--jobs", "2",
           "--format", "json", *extra]
    for c in REPLAY_CASES:
        cmd += ["--case", c]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=ROOT)


@pytest.fixture(scope="module")
def replay_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval-replay")
    proc = _eval(out, "--llm", "replay")
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(proc.stdout)


def test_cli_writes_results_summary_and_markdown(replay_run):
    out, summary = replay_run
    on_disk = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert CONTRACT_KEYS <= set(on_disk)
    assert on_disk["cases"] == summary["cases"] == 3
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["case"] for r in rows] == sorted(REPLAY_CASES)
    md = (out / "summary.md").read_text(encoding="utf-8")
    assert md.startswith("# nki-assist eval (replay)") and all(c in md for c in REPLAY_CASES)
    per = {c["case"]: c for c in on_disk["per_case"]}
    gold_counts = {c: len(load_gold(CASES / c / "gold.toml").issues) for c in REPLAY_CASES}
    assert {c: per[c]["gold"] for c in REPLAY_CASES} == gold_counts
    assert per["clean_softmax_new"]["clean"] is True


def test_replay_accepts_grounded_reply_and_falls_back_on_ungrounded(replay_run):
    _, summary = replay_run
    per = {c["case"]: c for c in summary["per_case"]}
    # rowmax: the recorded reply cites the real findings F1/F2 -> used as the LLM assessment
    assert per["rowmax_affine_carry_legacy"]["drafter"] == "llm"
    assert per["rowmax_affine_carry_legacy"]["verdict"] == "block"
    assert per["rowmax_affine_carry_legacy"]["hallucinations"] == 0
    # softmax: the recorded reply cites a non-existent F9 and claims equivalence -> deterministic fallback,
    # so the ungrounded "numerically equivalent" claim never reaches the scored text
    assert per["softmax_overflow_legacy"]["drafter"] == "fallback"
    assert not any("numerically equivalent" in n for n in per["softmax_overflow_legacy"]["hallucination_notes"])
    # clean_softmax has no recorded reply: fallback too
    assert per["clean_softmax_new"]["drafter"] == "fallback"


def test_thresholds_gate_exits_1_above_measured_and_0_at_measured(replay_run, tmp_path):
    _, summary = replay_run
    measured = summary["recall"]
    assert measured is not None
    ok = tmp_path / "ok.toml"
    ok.write_text(f"[min]\nrecall = {measured}\n[max]\nerrors = 0\n", encoding="utf-8")
    raised = tmp_path / "raised.toml"
    raised.write_text(f"[min]\nrecall = {min(1.0, measured) + 0.01}\n", encoding="utf-8")
    passed = _eval(tmp_path / "a", "--llm", "replay", "--thresholds", str(ok))
    assert passed.returncode == 0, passed.stderr
    assert "thresholds: all met" in passed.stderr
    failed = _eval(tmp_path / "b", "--llm", "replay", "--thresholds", str(raised))
    assert failed.returncode == 1
    assert "recall" in failed.stderr and "below the threshold" in failed.stderr
