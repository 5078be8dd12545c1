"""What the markdown and HTML review reports show, computed once (renderers only format it)."""

from __future__ import annotations

from dataclasses import dataclass, field
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
    numerics: list[tuple[str, Table | list[str] | str]] = field(default_factory=list)
    performance: list[tuple[str, Table | list[str] | str]] = field(default_factory=list)

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


def _extras(model: Any, skip: set[str]) -> list[tuple[str, Table | list[str] | str]]:
    out: list[tuple[str, Table | list[str] | str]] = []
    for key, value in (model.model_extra or {}).items():
        if key in skip or value in (None, [], {}, ""):
            continue
        title = key.replace("_", " ").capitalize()
        if isinstance(value, list) and all(isinstance(x, dict) for x in value):
            out.append((title, table(value)))
        elif isinstance(value, list):
            out.append((title, [_cell(x) for x in value]))
        elif isinstance(value, dict):
            out.append((title, [f"{k}: {_cell(v)}" for k, v in value.items()]))
        else:
            out.append((title, _cell(value)))
    return out


def _numerics(review: Review) -> list[tuple[str, Table | list[str] | str]]:
    n = review.numerics
    if n is None:
        return []
    out: list[tuple[str, Table | list[str] | str]] = []
    if n.sizes:
        out.append(("Sizes", table(n.sizes)))
    if n.scenarios:
        out.append(("Scenarios", ", ".join(n.scenarios)))
    if n.matrix:
        out.append(("Results", table(n.matrix)))
    return out + _extras(n, {"plots"})


def _performance(review: Review) -> list[tuple[str, Table | list[str] | str]]:
    p = review.performance
    if p is None:
        return []
    facts = []
    if p.estimated_time_us is not None:
        facts.append(f"estimated time: {p.estimated_time_us:.4g} us")
    if p.bottleneck:
        facts.append(f"bottleneck: {p.bottleneck}")
    if p.mfu_estimated_percent is not None:
        facts.append(f"estimated MFU: {p.mfu_estimated_percent:.3g}%")
    facts.append(f"HBM read / write: {p.hbm_read_bytes} / {p.hbm_write_bytes} bytes")
    out: list[tuple[str, Table | list[str] | str]] = [("Estimate", facts)]
    if p.engines:
        out.append(("Engines", table([{"engine": k, **v.model_dump()} for k, v in p.engines.items()])))
    if p.measured:
        out.append(("Measured (profile)", [f"{k}: {_cell(v)}" for k, v in p.measured.items()]))
    return out + _extras(p, {"plots"})


def build(review: Review) -> ReviewView:
    """The view of a review; drafts the deterministic assessment when the review has none."""
    assessment = review.assessment
    if assessment is None:
        from . import draft_assessment

        assessment = draft_assessment(review)
    sev = {f.id: f.severity.value for f in review.findings}
    items = []
    for it in sorted(assessment.items, key=lambda i: i.priority):
        s = min((sev[i] for i in it.finding_ids if i in sev), key=["error", "warning", "info"].index,
                default="info")
        items.append(ItemView(it, s, SEVERITY_LABEL[s], [ln for ln in it.what.splitlines() if ln.strip()]))
    counts = {s.value: sum(1 for f in review.findings if f.severity is s) for s in Severity}
    return ReviewView(review, assessment, items, counts, list(review.findings),
                      _numerics(review), _performance(review))


def counts_text(counts: dict[str, int]) -> str:
    parts = [f"{n} {k}{'s' if n != 1 and k != 'info' else ''}" for k, n in counts.items() if n]
    return ", ".join(parts) if parts else "no findings"
