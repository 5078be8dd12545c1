"""Grounding check for LLM assessments: every claim must trace back to a verified finding.

Checks (issue 6 item 6): cited ids exist; every error finding is covered; no item without an error
is placed above an error item; item severity/criterion match the cited findings; numbers and line
references appear in the cited findings, the source, or the hardware facts the prompt lists; the
verdict follows the rule; rubric scores cover the rubric and respect the caps the findings imply.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from ..findings import Finding, Severity
from ..hardware import Target
from ..schema import Review
from .drafter import score_cap, verdict_for
from .prompts import hardware_facts
from .reply import AssessmentReply
from .rubric import Rubric

# A number as written in prose: not part of an identifier (fp32, F3, NKI203, trn2, e4m3, x512).
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
_ANY_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LINE_REFS = (
    re.compile(r"\blines?\s+(\d+)(?:\s*(?:-|–|to|through|and)\s*(\d+))?", re.IGNORECASE),
    re.compile(r"\.(?:py|cu|cuh|h):(\d+)(?:-(\d+))?"),
    re.compile(r"(?<![A-Za-z0-9_])L(\d+)\b"),
)
ALWAYS_ALLOWED = {0.0, 1.0}
_SEV_RANK = {"error": 0, "warning": 1, "info": 2}


def _numbers_in_prose(text: str) -> list[tuple[str, float]]:
    out = []
    for m in _NUMBER.finditer(text):
        raw = m.group(0).rstrip(",")
        if re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+(\.\d+)?", raw):
            raw_num = raw.replace(",", "")
        else:
            raw_num = raw.split(",")[0]
        try:
            out.append((raw, abs(float(raw_num))))
        except ValueError:
            continue
    return out


def _collect(value: Any, acc: set[float]) -> None:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        acc.add(abs(float(value)))
    elif isinstance(value, str):
        for m in _ANY_NUMBER.finditer(value):
            try:
                acc.add(abs(float(m.group(0))))
            except ValueError:
                pass
    elif isinstance(value, dict):
        for k, v in value.items():
            _collect(k, acc)
            _collect(v, acc)
    elif isinstance(value, (list, tuple, set)):
        for v in value:
            _collect(v, acc)


def _derived(values: set[float]) -> set[float]:
    out = set(values)
    for a in values:
        out.update({a * 100, a / 1024, a / 1024 / 1024, a * 1e6, a * 1e3})
        if 1.0 < a < 100:
            out.add((a - 1.0) * 100)  # a 1.8x speedup quoted as "80% faster"
    return out


def _decimals(raw: str) -> int:
    return len(raw.split(".")[1]) if "." in raw and "e" not in raw.lower() else 0


class Allowed:
    """Numbers a text may state: values as found (may be quoted rounded) and unit conversions (exact)."""

    def __init__(self, values: set[float]):
        self.values = values
        self.derived = _derived(values)

    def __or__(self, extra: set[float]) -> "Allowed":
        return Allowed(self.values | extra)

    def __contains__(self, item: tuple[str, float]) -> bool:
        raw, x = item
        if x in ALWAYS_ALLOWED:
            return True
        if any(abs(x - a) <= 1e-9 * max(1.0, abs(a)) for a in self.derived):
            return True
        d = _decimals(raw)  # quoted with fewer digits: 83.2 -> 83, 0.0312 -> 0.031
        return any(round(a, d) == x and (d > 0 or abs(a) >= 10) for a in self.values)


def _line_refs(text: str) -> list[int]:
    refs = []
    for pat in _LINE_REFS:
        for m in pat.finditer(text):
            start = int(m.group(1))
            end = int(m.group(2)) if m.lastindex and m.lastindex >= 2 and m.group(2) else start
            refs.extend([start, end] if end != start else [start])
    return refs


def _lines_of(findings: Iterable[Finding]) -> set[int]:
    lines: set[int] = set()
    for f in findings:
        if f.line:
            lines.update(range(f.line, (f.end_line or f.line) + 1))
        lines.update(r.line for r in f.related)
    return lines


class Context:
    """What an assessment may cite: precomputed once per review."""

    def __init__(self, review: Review, target: Target, sources: dict[str, str] | None, rubric: Rubric):
        self.review = review
        self.rubric = rubric
        self.by_id = {f.id: f for f in review.findings}
        base: set[float] = set()
        _collect([v for _, v in hardware_facts(target)], base)
        _collect(list((sources or {}).values()), base)
        self.base = base
        self.all_numbers = set(base)
        _collect([f.to_json() for f in review.findings], self.all_numbers)
        for section in (review.performance, review.numerics):
            if section is not None:
                _collect(section.model_dump(mode="json"), self.all_numbers)
        counts = [sum(1 for f in review.findings if f.severity is s) for s in Severity]
        self.all_numbers.update(float(c) for c in counts + [len(review.findings)])
        self.all_allowed = Allowed(self.all_numbers)

    def numbers_for(self, findings: list[Finding]) -> Allowed:
        acc = set(self.base)
        _collect([f.to_json() for f in findings], acc)
        acc.add(float(len(findings)))
        return Allowed(acc)


def _check_text(where: str, text: str, allowed: Allowed, lines: set[int]) -> list[str]:
    problems = []
    refs = set(_line_refs(text))
    bad_lines = sorted(r for r in refs if r not in lines)
    if bad_lines:
        problems.append(f"{where} references line(s) {', '.join(map(str, bad_lines))} that no cited finding points at")
    ref_values = {float(r) for r in refs if r in lines}
    unknown = [raw for raw, x in _numbers_in_prose(text) if x not in ref_values and (raw, x) not in allowed]
    if unknown:
        shown = ", ".join(dict.fromkeys(unknown))
        problems.append(f"{where} states number(s) {shown} that do not appear in the cited findings, the source or the hardware facts")
    return problems


def validate(reply: AssessmentReply, ctx: Context) -> list[str]:
    """Violations of the grounding rules (empty when the reply may be used)."""
    v: list[str] = []
    review = ctx.review
    findings = list(review.findings)

    expected = verdict_for(findings)
    if reply.verdict != expected:
        worst = next((f for f in sorted(findings, key=Finding.sort_key)), None)
        because = f" (finding {worst.id} has severity {worst.severity.value})" if worst else " (no findings)"
        v.append(f"verdict is {reply.verdict!r} but the findings require {expected!r}{because}")

    covered: set[str] = set()
    items = sorted(reply.items, key=lambda it: it.priority)
    prios = [it.priority for it in reply.items]
    if len(set(prios)) != len(prios):
        v.append("item priorities are not unique")
    item_sev: list[str] = []
    for it in items:
        label = f"item {it.priority} ({it.title[:60]!r})"
        if not it.finding_ids:
            v.append(f"{label} cites no finding id")
        unknown = [fid for fid in it.finding_ids if fid not in ctx.by_id]
        if unknown:
            v.append(f"{label} cites finding id(s) {', '.join(unknown)} that do not exist "
                     f"(valid ids: {', '.join(ctx.by_id) or 'none'})")
        cited = [ctx.by_id[fid] for fid in it.finding_ids if fid in ctx.by_id]
        covered.update(f.id for f in cited)
        if cited:
            worst = min(cited, key=lambda f: f.severity.rank)
            if it.severity != worst.severity.value:
                v.append(f"{label} has severity {it.severity!r} but its most severe finding {worst.id} is "
                         f"{worst.severity.value!r}; severities may not change")
            if it.criterion not in {f.criterion for f in cited}:
                v.append(f"{label} has criterion {it.criterion!r}, which none of its findings "
                         f"({', '.join(f.id for f in cited)}) belongs to; categories may not change")
            allowed = ctx.numbers_for(cited)
            lines = _lines_of(cited)
            for field in ("title", "what", "why", "fix", "profiling"):
                v.extend(_check_text(f"{label} {field}", getattr(it, field), allowed, lines))
        item_sev.append(min((f.severity.value for f in cited), key=_SEV_RANK.__getitem__) if cited else it.severity)

    missing = [f.id for f in findings if f.severity is Severity.ERROR and f.id not in covered]
    if missing:
        v.append(f"error finding(s) {', '.join(missing)} are not covered by any item; every error must be")

    last_error = max((i for i, s in enumerate(item_sev) if s == "error"), default=-1)
    for i, (it, sev) in enumerate(zip(items, item_sev)):
        if i < last_error and sev != "error":
            v.append(f"item {it.priority} ({sev}) is placed above an error item; errors come first")
            break

    v.extend(_check_text("summary", reply.summary, ctx.all_allowed, _lines_of(findings)))

    scored = {c.id for c in ctx.rubric.scored()}
    given = [s.criterion for s in reply.rubric]
    for cid in sorted(scored - set(given)):
        v.append(f"rubric criterion {cid!r} has no score")
    for cid in sorted(set(given) - scored):
        v.append(f"rubric criterion {cid!r} is not in the rubric")
    for cid in sorted({c for c in given if given.count(c) > 1}):
        v.append(f"rubric criterion {cid!r} is scored more than once")
    for s in reply.rubric:
        if s.criterion not in scored:
            continue
        cap = score_cap(review, s.criterion)
        if not 0 <= s.score <= 4:
            v.append(f"rubric score for {s.criterion!r} is {s.score}; scores are 0-4")
        elif s.score > cap:
            v.append(f"rubric score {s.score} for {s.criterion!r} exceeds {cap}, the most its findings allow")
        crit_findings = [f for f in findings if f.criterion == s.criterion]
        allowed = ctx.numbers_for(crit_findings) | {float(s.score), float(cap), 4.0}
        v.extend(_check_text(f"rubric rationale for {s.criterion!r}", s.rationale, allowed, _lines_of(crit_findings)))
    return v
