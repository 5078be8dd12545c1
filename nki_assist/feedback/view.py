"""What the markdown and HTML review reports show, computed once (renderers only format it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from ..findings import Finding, Severity
from ..schema import Assessment, AssessmentItem, Review

SEVERITY_LABEL = {"error": "must fix", "warning": "should fix", "info": "nit"}
MAX_TABLE_ROWS = 40
MAX_TABLE_COLS = 9


@dataclass
class ItemView:
    item: AssessmentItem
    severity: str  # most severe cited finding
    label: str
    what_lines: list[str]


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]
    truncated: int = 0


@dataclass
class ReviewView:
    review: Review
    assessment: Assessment
    items: list[ItemView]
    counts: dict[str, int]
    findings: list[Finding]

    @property
    def drafter_note(self) -> str | None:
        a = self.assessment
        if a.drafter == "fallback" and a.llm:
            return f"The LLM draft was not used ({a.llm.fallback_reason}); this is the deterministic draft."
        return None

    @property
    def footer(self) -> str:
        a = self.assessment
        parts = [f"drafter: {a.drafter}"]
        if a.llm and a.llm.model:
            parts.append(f"model: {a.llm.model}")
            if a.llm.prompt_tokens is not None:
                parts.append(f"tokens: {a.llm.prompt_tokens} in / {a.llm.completion_tokens} out")
            if a.llm.cost_usd is not None:
                parts.append(f"cost: ${a.llm.cost_usd:.4f}")
            if a.llm.cached:
                parts.append("cached")
        if a.prompt_version:
            parts.append(f"prompts: {a.prompt_version}")
        if a.rubric_name:
            parts.append(f"rubric: {a.rubric_name}")
        parts.append(f"schema: {self.review.schema_}")
        return " · ".join(parts)


def location(f: Finding) -> str:
    if not f.file:
        return ""
    name = PurePath(f.file).name
    return f"{name}:{f.line}" if f.line else name


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return ", ".join(_cell(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k}={_cell(x)}" for k, x in v.items())
    return str(v)


def table(rows: list[dict[str, Any]]) -> Table:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    cols = cols[:MAX_TABLE_COLS]
    body = [[_cell(r.get(c)) for c in cols] for r in rows[:MAX_TABLE_ROWS]]
    return Table(cols, body, max(0, len(rows) - MAX_TABLE_ROWS))


def build(review: Review) -> ReviewView:
    """The view of a drafted review. Renderers only format: drafting is review.py's job, so a review
    without an assessment is a caller's mistake, not something to paper over here."""
    assessment = review.assessment
    if assessment is None:
        raise ValueError("the review has no assessment; draft it first (nki_assist.review.pipeline drafts every review)")
    sev = {f.id: f.severity.value for f in review.findings}
    items = []
    for it in sorted(assessment.items, key=lambda i: i.priority):
        s = min((sev[i] for i in it.finding_ids if i in sev), key=["error", "warning", "info"].index,
                default="info")
        items.append(ItemView(it, s, SEVERITY_LABEL[s], [ln for ln in it.what.splitlines() if ln.strip()]))
    counts = {s.value: sum(1 for f in review.findings if f.severity is s) for s in Severity}
    return ReviewView(review, assessment, items, counts, list(review.findings))


def counts_text(counts: dict[str, int]) -> str:
    parts = [f"{n} {k}{'s' if n != 1 and k != 'info' else ''}" for k, n in counts.items() if n]
    return ", ".join(parts) if parts else "no findings"
