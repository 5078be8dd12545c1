"""Markdown review report: verdict, prioritized items, rubric, findings, numerics, performance.

Written for pasting into a code review: every item cites its finding ids (F1, F2, ...).
"""

from __future__ import annotations

from ..feedback.view import ReviewView, build, counts_text, location
from ..schema import Review
from .safe import md_safe
from .sections import Bar, Bullets, Cell, Mark, Part, Plot, Section, Text, bar_text, described_items, sections


def _cell(text: str) -> str:
    return md_safe(" ".join(str(text).split())).replace("|", "\\|")


def _md_cell(c: Cell) -> str:
    if isinstance(c, Bar):
        return _cell(bar_text(c))
    return _cell(c.text if isinstance(c, Mark) else c)


def _part(p: Part) -> list[str]:
    if isinstance(p, Plot):
        return []  # image links are appended by the caller that wrote the PNGs
    if isinstance(p, Text):
        return [f"**{p.title}:** {md_safe(p.text)}" if p.title else md_safe(p.text), ""]
    if isinstance(p, Bullets):
        return [f"**{p.title}:**", ""] + [f"- {md_safe(x)}" for x in p.items] + [""]
    lines = [f"**{p.title}.**" + (f" *{p.caption}*" if p.caption else ""), "",
             "| " + " | ".join(_cell(c) for c in p.columns) + " |",
             "|" + "|".join("---" for _ in p.columns) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in p.rows]
    return lines + [""]


def _section(lines: list[str], sec: Section) -> None:
    lines += [f"## {sec.title}", ""]
    if sec.missing is not None:
        lines += [f"*Not available: {sec.missing}*", ""]
        return
    for p in sec.parts:
        lines += _part(p)


def render_markdown(review: Review) -> str:
    v: ReviewView = build(review)
    a = v.assessment
    port = review.port
    lines = [f"# nki-assist review: {port.name} ({port.target})", ""]
    lines += [f"**Verdict: {a.verdict.upper()}** · {counts_text(v.counts)} · drafter: {a.drafter}", ""]
    lines += [md_safe(a.summary), ""]
    if v.drafter_note:
        lines += [f"> **Note:** {md_safe(v.drafter_note)}", ""]
    sources = [(k, getattr(port, k)) for k in ("cuda", "nki", "spec") if getattr(port, k)]
    if sources:
        lines += [" · ".join(f"{k.upper() if k != 'spec' else 'Port spec'}: `{p}`" for k, p in sources), ""]

    lines += ["## Prioritized feedback", ""]
    if not v.items:
        lines += ["Nothing to change: the checks found no issues.", ""]
    for iv in v.items:
        it = iv.item
        ids = ", ".join(it.finding_ids)
        lines += [f"### {it.priority}. {md_safe(it.title)}", ""]
        lines += [f"*{iv.severity} ({iv.label}) · {it.criterion} · findings {ids}*", ""]
        lines += ["**What:**", ""] + [f"- {md_safe(ln)}" for ln in iv.what_lines] + [""]
        lines += [f"**Why it matters on Trainium:** {md_safe(it.why)}", ""]
        lines += [f"**Fix:** {md_safe(it.fix)}", ""]
        lines += [f"**How to confirm (profiling rationale):** {md_safe(it.profiling)}", ""]

    if a.rubric:
        lines += ["## Rubric", "", "| Criterion | Score | Rationale |", "|---|---|---|"]
        lines += [f"| {s.criterion} | {s.score}/4 | {_cell(s.rationale)} |" for s in a.rubric]
        lines.append("")

    lines += ["## Findings", ""]
    if v.findings:
        lines += ["| ID | Severity | Rule | Category | Location | Message |", "|---|---|---|---|---|---|"]
        described = described_items(v)  # their text is in the item already
        for f in v.findings:
            text = f"described in item {described[f.id]}" if f.id in described else _cell(f.message)
            lines.append(f"| {f.id} | {f.severity.value} | {f.rule} {f.name} | {f.category} | "
                         f"{_cell(location(f))} | {text} |")
    else:
        lines.append("None.")
    lines.append("")

    for sec in sections(review):
        _section(lines, sec)
    if review.notes:
        lines += ["## Notes", ""] + [f"- {_cell(n)}" for n in dict.fromkeys(review.notes)] + [""]
    lines += ["---", f"<sub>{v.footer}</sub>", ""]
    return "\n".join(lines)


render = render_markdown
