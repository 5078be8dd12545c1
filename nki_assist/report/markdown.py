"""Markdown review report: verdict, prioritized items, rubric, findings, numerics, performance.

Written for pasting into a code review: every item cites its finding ids (F1, F2, ...).
"""

from __future__ import annotations

from ..feedback.view import ReviewView, Table, build, counts_text, location
from ..schema import Review


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(t: Table) -> list[str]:
    lines = ["| " + " | ".join(_cell(c) for c in t.columns) + " |",
             "|" + "|".join("---" for _ in t.columns) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in t.rows]
    if t.truncated:
        lines.append(f"\n*{t.truncated} more rows in the JSON report.*")
    return lines


def _section(lines: list[str], title: str, parts: list) -> None:
    if not parts:
        return
    lines += [f"## {title}", ""]
    for name, body in parts:
        lines.append(f"**{name}.**" if not isinstance(body, str) else f"**{name}:** {body}")
        if isinstance(body, Table):
            lines += [""] + _table(body)
        elif isinstance(body, list):
            lines += [""] + [f"- {x}" for x in body]
        lines.append("")


def render_markdown(review: Review) -> str:
    v: ReviewView = build(review)
    a = v.assessment
    port = review.port
    lines = [f"# nki-assist review: {port.name} ({port.target})", ""]
    lines += [f"**Verdict: {a.verdict.upper()}** · {counts_text(v.counts)} · drafter: {a.drafter}", ""]
    lines += [a.summary, ""]
    if v.drafter_note:
        lines += [f"> **Note:** {v.drafter_note}", ""]
    sources = [(k, getattr(port, k)) for k in ("cuda", "nki", "spec") if getattr(port, k)]
    if sources:
        lines += [" · ".join(f"{k.upper() if k != 'spec' else 'Port spec'}: `{p}`" for k, p in sources), ""]

    lines += ["## Prioritized feedback", ""]
    if not v.items:
        lines += ["Nothing to change: the checks found no issues.", ""]
    for iv in v.items:
        it = iv.item
        ids = ", ".join(it.finding_ids)
        lines += [f"### {it.priority}. {it.title}", ""]
        lines += [f"*{iv.severity} ({iv.label}) · {it.criterion} · findings {ids}*", ""]
        lines += ["**What:**", ""] + [f"- {ln}" for ln in iv.what_lines] + [""]
        lines += [f"**Why it matters on Trainium:** {it.why}", ""]
        lines += [f"**Fix:** {it.fix}", ""]
        lines += [f"**How to confirm (profiling rationale):** {it.profiling}", ""]

    if a.rubric:
        lines += ["## Rubric", "", "| Criterion | Score | Rationale |", "|---|---|---|"]
        lines += [f"| {s.criterion} | {s.score}/4 | {_cell(s.rationale)} |" for s in a.rubric]
        lines.append("")

    lines += ["## Findings", ""]
    if v.findings:
        lines += ["| ID | Severity | Rule | Category | Location | Message |", "|---|---|---|---|---|---|"]
        for f in v.findings:
            lines.append(f"| {f.id} | {f.severity.value} | {f.rule} {f.name} | {f.category} | "
                         f"{_cell(location(f))} | {_cell(f.message)} |")
    else:
        lines.append("None.")
    lines.append("")

    _section(lines, "Numerics", v.numerics)
    _section(lines, "Performance", v.performance)
    if review.numerics is None or review.performance is None or review.notes:
        notes = list(review.notes)
        if review.numerics is None and not any(n.lower().startswith("numerics") for n in notes):
            notes.append("numerics: not run")
        if review.performance is None and not any(n.lower().startswith("perf") for n in notes):
            notes.append("performance: no estimate")
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    lines += ["---", f"<sub>{v.footer}</sub>", ""]
    return "\n".join(lines)


render = render_markdown
