"""Feedback-quality metrics of one case and of a whole suite (keys of the eval summary contract).

Per case: issue precision/recall/F1 over emitted units (assessment items) vs gold issues,
severity-weighted recall, critical recall, localisation, NDCG@5 of the emitted order, grounding,
hallucinations, rubric coverage, false positives on clean cases. Over the suite: micro-averaged
precision/recall/F1 and critical recall, Kendall tau-b of severities over all matched pairs,
mean NDCG@5, grounding rate, totals.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from ..findings import Finding, Severity
from ..schema import Review
from .gold import Gold
from .match import DEFAULT_WINDOW, Match, line_distance, match, same_file

COUNTED = (Severity.ERROR, Severity.WARNING)  # info units are advice: they may match, never count as FP
EMITTED_RANK = {Severity.ERROR: 3, Severity.WARNING: 2, Severity.INFO: 1}


def units_of(review: Review) -> list[list[Finding]]:
    """Assessment items as lists of findings (priority order); without items, one unit per finding."""
    by_id = {f.id: f for f in review.findings}
    a = review.assessment
    if a is not None and a.items:
        items = sorted(a.items, key=lambda it: it.priority)
        units = [[by_id[i] for i in it.finding_ids if i in by_id] for it in items]
        cited = {i for it in items for i in it.finding_ids}
        units += [[f] for f in review.findings if f.id not in cited]  # findings the drafter left out
        return [u for u in units if u]
    return [[f] for f in review.findings]


def worst(unit: list[Finding]) -> Severity:
    return min((f.severity for f in unit), key=lambda s: s.rank)


def kendall_tau_b(xs: list[float], ys: list[float]) -> float | None:
    """Kendall's tau-b (ties in both variables corrected); None when undefined."""
    n = len(xs)
    conc = disc = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = xs[i] - xs[j], ys[i] - ys[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    denom = math.sqrt((conc + disc + tx) * (conc + disc + ty))
    return (conc - disc) / denom if denom else None


def ndcg_at(relevances: list[float], ideal: list[float], k: int = 5) -> float | None:
    """NDCG@k of gains in emitted order against the ideal (gold weights, best first)."""
    def dcg(rs: list[float]) -> float:
        return sum(r / math.log2(i + 2) for i, r in enumerate(rs[:k]))

    best = dcg(sorted(ideal, reverse=True))
    return dcg(relevances) / best if best > 0 else None


def _text_of(review: Review) -> str:
    a = review.assessment
    if a is None:
        return ""
    parts = [a.summary] + [" ".join((it.title, it.what, it.why, it.fix, it.profiling)) for it in a.items]
    parts += [r.rationale for r in a.rubric]
    return "\n".join(parts)


@dataclass
class CaseScore:
    case: str
    clean: bool
    gold: int
    emitted: int  # counted units (warning/error)
    matched_gold: int
    matched_emitted: int
    precision: float | None
    recall: float | None
    f1: float | None
    severity_weighted_recall: float | None
    critical: int
    critical_matched: int
    localisation: float | None
    ndcg_at_5: float | None
    grounded_items: int
    items: int
    hallucinations: int
    hallucination_notes: list[str] = field(default_factory=list)
    rubric_coverage: float | None = None
    clean_false_positives: int = 0
    verdict: str | None = None
    drafter: str | None = None
    fallback_reason: str | None = None  # why an LLM draft was not used (drafter "fallback")
    seconds: float = 0.0
    matches: list[dict[str, Any]] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)  # gold ids not found
    false_positives: list[str] = field(default_factory=list)  # "F3 NKI104 file:line"
    severity_pairs: list[tuple[float, float]] = field(default_factory=list)
    error: str | None = None
    line_exact: int = 0  # gold issues with a finding of an accepted category inside the gold range
    line_missed: list[str] = field(default_factory=list)  # gold ids without such a finding

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("severity_pairs")
        return d


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def line_exact_issues(gold: Gold, findings: list[Finding]) -> list[str]:
    """Ids of the gold issues that some finding names at the exact place: same file, a category the
    gold accepts, and its line range inside the gold range (distance 0; related locations do not count)."""
    return [g.id for g in gold.issues
            if any(same_file(f.file, g.file) and f.category in g.categories and line_distance(f, g) == 0
                   for f in findings)]


def score_case(case: str, gold: Gold, review: Review, *, rubric_criteria: list[str] | None = None,
               window: int = DEFAULT_WINDOW, seconds: float = 0.0) -> CaseScore:
    units = units_of(review)
    matches: list[Match] = match(gold.issues, units, window=window)
    matched_units = {m.unit for m in matches}
    counted = [i for i, u in enumerate(units) if worst(u) in COUNTED]
    matched_counted = sum(1 for i in counted if i in matched_units)
    fp_units = [i for i in counted if i not in matched_units]

    n_gold = len(gold.issues)
    precision = matched_counted / len(counted) if counted else 1.0  # nothing emitted: no false positive
    recall = len(matches) / n_gold if n_gold else None
    wsum = sum(g.weight for g in gold.issues)
    wrec = sum(m.gold.weight for m in matches) / wsum if wsum else None
    crit = [g for g in gold.issues if g.severity == "critical"]
    crit_m = sum(1 for m in matches if m.gold.severity == "critical")
    loc = sum(1 for m in matches if m.distance == 0) / len(matches) if matches else None

    gain = {m.unit: m.gold.weight for m in matches}
    rels = [gain.get(i, 0.0) for i in range(len(units))]
    ndcg = ndcg_at(rels, [g.weight for g in gold.issues]) if n_gold else None

    notes: list[str] = []
    a = review.assessment
    ids = {f.id for f in review.findings}
    items = a.items if a else []
    grounded = 0
    for it in items:
        bad = [i for i in it.finding_ids if i not in ids]
        if bad or not it.finding_ids:
            notes.append(f"item {it.priority} cites unknown finding(s) {bad or '(none)'}")
        else:
            grounded += 1
    text = _text_of(review).lower()
    for phrase in gold.case.must_not_claim:
        if re.search(re.escape(phrase.lower()), text):
            notes.append(f"claims {phrase!r}")
    if crit and a is not None and a.verdict in ("approve", "approve-with-nits"):
        notes.append(f"verdict {a.verdict!r} on a case with {len(crit)} critical issue(s)")
    if gold.case.clean and a is not None and a.verdict == "block":
        notes.append("verdict 'block' on a clean port")

    coverage = None
    if a is not None and rubric_criteria:
        scored = {r.criterion for r in a.rubric}
        coverage = sum(1 for c in rubric_criteria if c in scored) / len(rubric_criteria)

    def where(f: Finding) -> str:
        return f"{f.id} {f.rule} {f.file}:{f.line}"

    exact = line_exact_issues(gold, review.findings)

    return CaseScore(
        case=case, clean=gold.case.clean, gold=n_gold, emitted=len(counted), matched_gold=len(matches),
        matched_emitted=matched_counted, precision=precision, recall=recall, f1=_f1(precision, recall),
        severity_weighted_recall=wrec, critical=len(crit), critical_matched=crit_m, localisation=loc,
        ndcg_at_5=ndcg, grounded_items=grounded, items=len(items), hallucinations=len(notes),
        hallucination_notes=notes, rubric_coverage=coverage,
        clean_false_positives=len(counted) if gold.case.clean else 0,
        verdict=a.verdict if a else None, drafter=a.drafter if a else None,
        fallback_reason=a.llm.fallback_reason if a and a.llm else None, seconds=round(seconds, 3),
        matches=[{"gold": m.gold.id, "finding": m.finding.id, "rule": m.finding.rule, "category": m.finding.category,
                  "line": m.finding.line, "distance": m.distance, "exact_category": m.exact_category} for m in matches],
        missed=[g.id for g in gold.issues if g.id not in {m.gold.id for m in matches}],
        false_positives=[where(units[i][0]) for i in fp_units],
        severity_pairs=[(m.gold.weight, float(EMITTED_RANK[worst(units[m.unit])])) for m in matches],
        line_exact=len(exact),
        line_missed=[g.id for g in gold.issues if g.id not in exact],
    )


def _mean(xs: list[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def summarize(scores: list[CaseScore], seconds: float = 0.0) -> dict[str, Any]:
    """Suite summary with the keys of design.md's eval summary contract (plus a few more)."""
    emitted = sum(s.emitted for s in scores)
    matched_e = sum(s.matched_emitted for s in scores)
    gold = sum(s.gold for s in scores)
    matched_g = sum(s.matched_gold for s in scores)
    crit = sum(s.critical for s in scores)
    precision = matched_e / emitted if emitted else 1.0
    recall = matched_g / gold if gold else None
    pairs = [p for s in scores for p in s.severity_pairs]
    items = sum(s.items for s in scores)

    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 4)

    return {
        "cases": len(scores),
        "precision": r(precision),
        "recall": r(recall),
        "f1": r(_f1(precision, recall)),
        "critical_recall": r(sum(s.critical_matched for s in scores) / crit if crit else None),
        "severity_weighted_recall": r(_mean([s.severity_weighted_recall for s in scores if not s.clean])),
        "localisation": r(_mean([s.localisation for s in scores])),
        "line_exact_recall": r(sum(s.line_exact for s in scores) / gold if gold else None),
        "clean_false_positives": sum(s.clean_false_positives for s in scores),
        "hallucinations": sum(s.hallucinations for s in scores),
        "grounding_rate": r(sum(s.grounded_items for s in scores) / items if items else None),
        "kendall_tau": r(kendall_tau_b([a for a, _ in pairs], [b for _, b in pairs])),
        "ndcg_at_5": r(_mean([s.ndcg_at_5 for s in scores])),
        "rubric_coverage": r(_mean([s.rubric_coverage for s in scores])),
        "errors": sum(1 for s in scores if s.error),
        "llm_drafted": sum(1 for s in scores if s.drafter == "llm"),  # LLM modes: replies that passed grounding
        "llm_fallbacks": sum(1 for s in scores if s.drafter == "fallback"),
        "seconds": round(seconds, 2),
        "per_case": [s.to_json() for s in scores],
    }
