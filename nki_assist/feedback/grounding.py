"""Grounding check for LLM assessments: every claim must trace back to a verified finding.

Checks (issue 6 item 6, issue 16): cited ids exist; every error finding is covered; no item without an
error is placed above an error item; item severity/criterion match the cited findings; every number and
line reference in an item appears somewhere in the findings it cites (message, fix, evidence at any
depth, location, related locations and the lines their text names), in the source excerpts the prompt
showed, or in the hardware facts the prompt lists, compared after normalising how it is written
(`numbers.py`: thousands separators, units, percentages, x factors, scientific notation, rounding);
the verdict follows the rule; rubric scores cover the rubric and respect the caps the findings imply.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterable

from ..findings import Finding, Severity
from ..api.hardware import Target
from ..schema import Review
from .drafter import score_cap, verdict_for
from .numbers import Grounded, line_refs, quantities
from .prompts import excerpts, hardware_facts
from .reply import AssessmentReply
from .rubric import Rubric

_SEV_RANK = {"error": 0, "warning": 1, "info": 2}

# Violation kinds (stable: tests and the eval replay report them).
KINDS = ("verdict", "no-citation", "unknown-id", "uncovered-error", "order", "priority", "severity",
         "criterion", "number", "line", "rubric")


@dataclass(frozen=True)
class Violation:
    kind: str
    message: str

    def __str__(self) -> str:
        return self.message


def _evidence_lines(value: Any, key: str, acc: set[int]) -> None:
    """Line numbers evidence names by key: `loop_line: 30`, `cuda_line`, `*_lines: [..]`, `by_line: {"35": ..}`."""
    k = key.lower()
    named = k == "line" or k.endswith("_line") or k.endswith("lines")
    if isinstance(value, bool):
        return
    if isinstance(value, int) and named and value >= 1:
        acc.add(value)
    elif isinstance(value, dict):
        for sub, v in value.items():
            if "line" in k and str(sub).isdigit():
                acc.add(int(sub))
            _evidence_lines(v, str(sub), acc)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _evidence_lines(v, key, acc)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def finding_lines(f: Finding) -> set[int]:
    """Every line a finding points at: its range, related locations, evidence lines, lines its text names."""
    lines: set[int] = set()
    if f.line:
        lines.update(range(f.line, (f.end_line or f.line) + 1))
    lines.update(r.line for r in f.related)
    _evidence_lines(f.evidence, "", lines)
    for text in [f.message, f.fix or "", *(r.message for r in f.related), *_strings(f.evidence)]:
        lines.update(line_refs(text))
    return lines


def finding_numbers(f: Finding) -> Grounded:
    """Every number a finding states anywhere (its JSON form, recursively) and every line it points at."""
    g = Grounded()
    # The autofix's edit ranges are positions for an editor, not facts a reviewer may quote.
    g.add(f.model_dump(mode="json", exclude={"autofix"}))
    for line in finding_lines(f):
        g.add_number(line)
    return g


class Context:
    """What an assessment may cite: precomputed once per review."""

    def __init__(self, review: Review, target: Target, sources: dict[str, str] | None, rubric: Rubric):
        self.review = review
        self.rubric = rubric
        self.by_id = {f.id: f for f in review.findings}
        base = Grounded()
        for _, fact in hardware_facts(target):
            base.add_text(fact)
        for ex in excerpts(review, sources):  # the source the prompt showed, without the line-number gutter
            for row in ex.text.splitlines():
                base.add_text(row.split(" | ", 1)[1] if " | " in row else row)
        self.base = base
        self._numbers: dict[str, Grounded] = {}
        self._lines: dict[str, set[int]] = {}

    def lines_of(self, findings: Iterable[Finding]) -> set[int]:
        out: set[int] = set()
        for f in findings:
            if f.id not in self._lines:
                self._lines[f.id] = finding_lines(f)
            out |= self._lines[f.id]
        return out

    def numbers_for(self, findings: list[Finding], *extra: float) -> Grounded:
        g = self.base.copy()
        for f in findings:
            if f.id not in self._numbers:
                self._numbers[f.id] = finding_numbers(f)
            g.update(self._numbers[f.id])
        g.add_number(float(len(findings)))
        for x in extra:
            g.add_number(x)
        return g

    @cached_property
    def all_allowed(self) -> Grounded:
        """For the summary: any finding, the performance and numerics sections, and the finding counts."""
        findings = list(self.review.findings)
        counts = [sum(1 for f in findings if f.severity is s) for s in Severity]
        g = self.numbers_for(findings, *map(float, counts))
        for section in (self.review.performance, self.review.numerics):
            if section is not None:
                g.add(section.model_dump(mode="json"))
        return g


def _check_text(where: str, text: str, allowed: Grounded, lines: set[int]) -> list[Violation]:
    problems = []
    refs = line_refs(text)
    bad_lines = sorted({r for r in refs if r not in lines})
    if bad_lines:
        problems.append(Violation("line", f"{where} references line(s) {', '.join(map(str, bad_lines))} "
                                          "that no cited finding points at"))
    ref_values = {float(r) for r in refs}  # judged as lines above, not again as numbers
    unknown = [q.raw for q in quantities(text)
               if not (q.unit is None and q.value in ref_values) and q not in allowed]
    if unknown:
        shown = ", ".join(dict.fromkeys(unknown))
        problems.append(Violation("number", f"{where} states number(s) {shown} that do not appear in the cited "
                                            "findings, the source excerpts or the hardware facts"))
    return problems


def check(reply: AssessmentReply, ctx: Context) -> list[Violation]:
    """Violations of the grounding rules, with their kind (empty when the reply may be used)."""
    v: list[Violation] = []
    review = ctx.review
    findings = list(review.findings)

    expected = verdict_for(findings)
    if reply.verdict != expected:
        worst = next((f for f in sorted(findings, key=Finding.sort_key)), None)
        because = f" (finding {worst.id} has severity {worst.severity.value})" if worst else " (no findings)"
        v.append(Violation("verdict", f"verdict is {reply.verdict!r} but the findings require {expected!r}{because}"))

    covered: set[str] = set()
    items = sorted(reply.items, key=lambda it: it.priority)
    prios = [it.priority for it in reply.items]
    if len(set(prios)) != len(prios):
        v.append(Violation("priority", "item priorities are not unique"))
    item_sev: list[str] = []
    for it in items:
        label = f"item {it.priority} ({it.title[:60]!r})"
        if not it.finding_ids:
            v.append(Violation("no-citation", f"{label} cites no finding id"))
        unknown = [fid for fid in it.finding_ids if fid not in ctx.by_id]
        if unknown:
            v.append(Violation("unknown-id", f"{label} cites finding id(s) {', '.join(unknown)} that do not exist "
                                             f"(valid ids: {', '.join(ctx.by_id) or 'none'})"))
        cited = [ctx.by_id[fid] for fid in it.finding_ids if fid in ctx.by_id]
        covered.update(f.id for f in cited)
        if cited:
            worst = min(cited, key=lambda f: f.severity.rank)
            if it.severity != worst.severity.value:
                v.append(Violation("severity", f"{label} has severity {it.severity!r} but its most severe finding "
                                               f"{worst.id} is {worst.severity.value!r}; severities may not change"))
            if it.criterion not in {f.criterion for f in cited}:
                v.append(Violation("criterion", f"{label} has criterion {it.criterion!r}, which none of its findings "
                                                f"({', '.join(f.id for f in cited)}) belongs to; categories may not change"))
            allowed = ctx.numbers_for(cited)
            lines = ctx.lines_of(cited)
            for field in ("title", "what", "why", "fix", "profiling"):
                v.extend(_check_text(f"{label} {field}", getattr(it, field), allowed, lines))
        item_sev.append(min((f.severity.value for f in cited), key=_SEV_RANK.__getitem__) if cited else it.severity)

    missing = [f.id for f in findings if f.severity is Severity.ERROR and f.id not in covered]
    if missing:
        v.append(Violation("uncovered-error", f"error finding(s) {', '.join(missing)} are not covered by any item; "
                                              "every error must be"))

    last_error = max((i for i, s in enumerate(item_sev) if s == "error"), default=-1)
    for i, (it, sev) in enumerate(zip(items, item_sev)):
        if i < last_error and sev != "error":
            v.append(Violation("order", f"item {it.priority} ({sev}) is placed above an error item; errors come first"))
            break

    v.extend(_check_text("summary", reply.summary, ctx.all_allowed, ctx.lines_of(findings)))

    scored = {c.id for c in ctx.rubric.scored()}
    given = [s.criterion for s in reply.rubric]
    for cid in sorted(scored - set(given)):
        v.append(Violation("rubric", f"rubric criterion {cid!r} has no score"))
    for cid in sorted(set(given) - scored):
        v.append(Violation("rubric", f"rubric criterion {cid!r} is not in the rubric"))
    for cid in sorted({c for c in given if given.count(c) > 1}):
        v.append(Violation("rubric", f"rubric criterion {cid!r} is scored more than once"))
    for s in reply.rubric:
        if s.criterion not in scored:
            continue
        cap = score_cap(review, s.criterion)
        if not 0 <= s.score <= 4:
            v.append(Violation("rubric", f"rubric score for {s.criterion!r} is {s.score}; scores are 0-4"))
        elif s.score > cap:
            v.append(Violation("rubric", f"rubric score {s.score} for {s.criterion!r} exceeds {cap}, "
                                         "the most its findings allow"))
        crit_findings = [f for f in findings if f.criterion == s.criterion]
        counts = [sum(1 for f in crit_findings if f.severity is sev) for sev in Severity]
        allowed = ctx.numbers_for(crit_findings, float(s.score), float(cap), 4.0, *map(float, counts))
        v.extend(_check_text(f"rubric rationale for {s.criterion!r}", s.rationale, allowed,
                             ctx.lines_of(crit_findings)))
    return v


def validate(reply: AssessmentReply, ctx: Context) -> list[str]:
    """Violations of the grounding rules as messages (empty when the reply may be used)."""
    return [x.message for x in check(reply, ctx)]
