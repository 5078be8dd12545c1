"""Matcher and metrics on small hand-computed examples."""

from __future__ import annotations

import math

import pytest

from nki_assist.evalsuite.gold import Gold, GoldError, GoldIssue, load_gold
from nki_assist.evalsuite.match import match
from nki_assist.evalsuite.metrics import kendall_tau_b, ndcg_at, score_case, summarize, units_of
from nki_assist.findings import Finding
from nki_assist.schema import Assessment, AssessmentItem, PortInfo, Review, RubricScore


def G(id, cat, sev, lines, file="k_nki.py", alts=()):
    return GoldIssue(id=id, category=cat, severity=sev, file=file, lines=lines, summary="s", alternatives=list(alts))


def F(id, cat, line, sev="warning", file="ports/x/k_nki.py", rule="R1"):
    return Finding(id=id, rule=rule, name="n", category=cat, severity=sev, message="m", file=file, line=line)


def test_match_window_category_and_one_to_one():
    gold = [G("G1", "missing-epilogue", "critical", (10, 12)), G("G2", "small-dma", "minor", (30, 30), alts=["redundant-dma"])]
    units = [[F("F1", "missing-epilogue", 14)],   # 2 lines after the range: within window 3
             [F("F2", "missing-epilogue", 11)],   # inside the range: preferred (distance 0)
             [F("F3", "redundant-dma", 33)],      # alternative category, distance 3
             [F("F4", "small-dma", 40)]]          # too far
    ms = match(gold, units)
    assert [(m.gold.id, m.finding.id, m.distance, m.exact_category) for m in ms] == [
        ("G1", "F2", 0, True), ("G2", "F3", 3, False)]
    assert match(gold, units, window=2)[1:] == []  # F3 is 3 lines away
    # other file never matches
    assert match(gold, [[F("F9", "missing-epilogue", 11, file="other.py")]]) == []


def test_exact_category_beats_distance():
    gold = [G("G1", "indexing-error", "major", (5, 5), alts=["output-mismatch"])]
    ms = match(gold, [[F("F1", "output-mismatch", 5)], [F("F2", "indexing-error", 7)]])
    assert ms[0].finding.id == "F2"


def test_kendall_tau_b_hand_values():
    assert kendall_tau_b([1, 2, 3], [1, 2, 3]) == 1.0
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == -1.0
    # x=[3,3,1], y=[3,2,2]: pairs (0,1) tie in x, (0,2) concordant, (1,2) tie in y
    assert math.isclose(kendall_tau_b([3, 3, 1], [3, 2, 2]), 1 / math.sqrt(2 * 2))
    assert kendall_tau_b([1, 1], [2, 2]) is None


def test_ndcg_hand_value():
    # emitted gains [0, 3, 2]; ideal [3, 2]
    dcg = 3 / math.log2(3) + 2 / math.log2(4)
    idcg = 3 / math.log2(2) + 2 / math.log2(3)
    assert math.isclose(ndcg_at([0, 3, 2], [3, 2]), dcg / idcg)
    assert ndcg_at([3, 2], [3, 2]) == 1.0
    assert ndcg_at([1.0], []) is None


def review(findings, items=None, verdict="block", rubric=("migration-correctness",)):
    a = Assessment(verdict=verdict, summary="The port is not numerically equivalent.",
                   items=items or [], rubric=[RubricScore(criterion=c, score=1, rationale="r") for c in rubric])
    return Review(port=PortInfo(name="x"), findings=findings, assessment=a)


def item(prio, ids, crit="migration-correctness"):
    return AssessmentItem(finding_ids=ids, priority=prio, criterion=crit, title="t", what="w", why="y", fix="f", profiling="p")


def test_score_case_numbers():
    gold = Gold.model_validate({"case": {"title": "t", "must_not_claim": ["numerically equivalent"]}, "issues": [
        {"id": "G1", "category": "missing-epilogue", "severity": "critical", "file": "k_nki.py", "lines": [10, 12], "summary": "s"},
        {"id": "G2", "category": "small-dma", "severity": "minor", "file": "k_nki.py", "lines": 30, "summary": "s"},
        {"id": "G3", "category": "sbuf-budget", "severity": "major", "file": "k_nki.py", "lines": 50, "summary": "s"}]})
    fs = [F("F1", "missing-epilogue", 11, "error"), F("F2", "output-mismatch", 11, "error"),
          F("F3", "small-dma", 30), F("F4", "fp32-matmul", 70), F("F5", "accumulation-order", 80, "info")]
    rv = review(fs, [item(1, ["F1", "F2"]), item(2, ["F4"], "hardware-utilization"), item(3, ["F3"], "memory-hierarchy"),
                     item(4, ["F5"], "numerical-accuracy"), item(5, ["F99"])])
    s = score_case("c", gold, rv, rubric_criteria=["migration-correctness", "memory-hierarchy"])
    # units: [F1,F2] (error), [F4] (warn), [F3] (warn), [F5] (info); F99 cites nothing real -> dropped
    assert s.emitted == 3 and s.matched_emitted == 2
    assert s.precision == pytest.approx(2 / 3) and s.recall == pytest.approx(2 / 3)
    assert s.severity_weighted_recall == pytest.approx((3 + 1) / 6)
    assert (s.critical, s.critical_matched) == (1, 1)
    assert s.localisation == 1.0 and s.missed == ["G3"] and s.false_positives == ["F4 R1 ports/x/k_nki.py:70"]
    # gains in unit order [3, 0, 1, 0] vs ideal [3, 2, 1]
    assert s.ndcg_at_5 == pytest.approx((3 + 1 / math.log2(4)) / (3 + 2 / math.log2(3) + 1 / 2))
    assert s.items == 5 and s.grounded_items == 4
    assert s.hallucinations == 2  # F99 and the forbidden phrase
    assert s.rubric_coverage == 0.5


def test_clean_case_false_positives_and_summary():
    clean = Gold.model_validate({"case": {"title": "clean", "clean": True}})
    s1 = score_case("clean", clean, review([F("F1", "small-dma", 3), F("F2", "accumulation-order", 4, "info")],
                                           verdict="revise"))
    assert s1.clean_false_positives == 1 and s1.recall is None and s1.precision == 0.0
    gold = Gold.model_validate({"case": {"title": "t"}, "issues": [
        {"id": "G1", "category": "small-dma", "severity": "critical", "file": "k_nki.py", "lines": 3, "summary": "s"}]})
    s2 = score_case("bug", gold, review([F("F1", "small-dma", 3, "error")]))
    summ = summarize([s1, s2], seconds=1.5)
    assert summ["cases"] == 2 and summ["clean_false_positives"] == 1
    assert summ["precision"] == 0.5 and summ["recall"] == 1.0 and summ["critical_recall"] == 1.0
    assert summ["f1"] == pytest.approx(2 * 0.5 / 1.5, abs=1e-4)
    assert len(summ["per_case"]) == 2 and summ["seconds"] == 1.5


def test_units_fall_back_to_findings_without_items():
    rv = Review(port=PortInfo(name="x"), findings=[F("F1", "small-dma", 3), F("F2", "small-dma", 4)])
    assert [[f.id for f in u] for u in units_of(rv)] == [["F1"], ["F2"]]


def test_gold_validation_errors(tmp_path):
    p = tmp_path / "gold.toml"
    p.write_text('[case]\ntitle="t"\n[[issues]]\nid="G1"\ncategory="not-a-category"\nseverity="major"\n'
                 'file="k.py"\nlines=[3,1]\nsummary="s"\n')
    with pytest.raises(GoldError) as e:
        load_gold(p)
    assert "gold.toml" in str(e.value) and "not-a-category" in str(e.value)
    p.write_text('[case]\ntitle="t"\nclean=true\n[[issues]]\nid="G1"\ncategory="small-dma"\nseverity="major"\n'
                 'file="k.py"\nlines=3\nsummary="s"\n')
    with pytest.raises(GoldError, match="clean case"):
        load_gold(p)


def test_line_exact_recall_needs_a_finding_inside_the_gold_range():
    gold = Gold.model_validate({"case": {"title": "t"}, "issues": [
        {"id": "G1", "category": "indexing-error", "severity": "critical", "file": "k_nki.py", "lines": 31,
         "summary": "s", "alternatives": ["uninitialized-read"]},
        {"id": "G2", "category": "small-dma", "severity": "minor", "file": "k_nki.py", "lines": [20, 21], "summary": "s"},
        {"id": "G3", "category": "overflow-risk", "severity": "major", "file": "k_nki.py", "lines": 40, "summary": "s"}]})
    fs = [F("F1", "uninitialized-read", 33, "error"),   # within the matching window (2 lines), not inside
          F("F2", "small-dma", 21),                     # inside: line-exact
          F("F3", "output-mismatch", 40, "error"),      # inside, but a category G3 does not accept
          F("F4", "overflow-risk", 40, "info", file="other_nki.py")]  # right line, other file
    s = score_case("c", gold, review(fs))
    assert s.matched_gold == 2  # G1 (window) and G2
    assert s.line_exact == 1 and s.line_missed == ["G1", "G3"]
    moved = [F("F1", "uninitialized-read", 31, "error"), *fs[1:]]
    s2 = score_case("c2", gold, review(moved))
    assert s2.line_exact == 2 and s2.line_missed == ["G3"]
    summ = summarize([s, s2])
    assert summ["line_exact_recall"] == pytest.approx(3 / 6, abs=1e-4)
    clean = Gold.model_validate({"case": {"title": "clean", "clean": True}})
    assert summarize([score_case("k", clean, review([]))])["line_exact_recall"] is None
