"""Deterministic drafter: the assessment written from findings alone, offline and reproducible.

Findings with one root cause are merged into one item; items are ordered by severity, criterion
(correctness, memory, numerics, utilization) and estimated gain; the verdict and rubric scores
follow fixed rules, so the same Review always gives the same Assessment.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from .. import taxonomy
from ..findings import Finding, Severity
from ..api.hardware import Target
from ..schema import Assessment, AssessmentItem, Review, RubricScore, Verdict
from .lead import diagnosis_of, diagnosis_sentence, proven_diff
from .prompts import environment, explanations, prompt_version, render_text
from .rubric import Rubric

# Evidence keys that name a shared root cause: findings in one file with equal values merge.
ROOT_CAUSE_KEYS = ("root_cause", "constant")
MAX_WHY_PARTS = 2


def verdict_for(findings: list[Finding]) -> Verdict:
    sev = {f.severity for f in findings}
    if Severity.ERROR in sev:
        return "block"
    if Severity.WARNING in sev:
        return "revise"
    if Severity.INFO in sev:
        return "approve-with-nits"
    return "approve"


# ---------------------------------------------------------------------------------------------
# Merging.


def _hashable(v: Any) -> Any:
    if isinstance(v, (str, int, float, bool)):
        return v
    return repr(v)


def group_findings(findings: list[Finding]) -> list[list[Finding]]:
    """Union-find over root-cause keys; each group in priority order, groups in order of first member."""
    parent = list(range(len(findings)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)

    seen: dict[tuple, int] = {}
    for i, f in enumerate(findings):
        keys: list[tuple] = []
        if f.file and f.line and f.severity is not Severity.INFO:
            keys.append(("line", f.file, f.line, f.criterion))  # one line, one concern; nits stay apart
        keys.append(("rule", f.file, f.rule, f.severity.value))  # the same mistake repeated
        for k in ROOT_CAUSE_KEYS:
            if f.evidence.get(k) not in (None, "", [], {}):
                keys.append(("root", f.file, k, _hashable(f.evidence[k])))
        for key in keys:
            if key in seen:
                union(seen[key], i)
            else:
                seen[key] = i
    groups: dict[int, list[Finding]] = {}
    for i, f in enumerate(findings):
        groups.setdefault(find(i), []).append(f)
    return [sorted(g, key=Finding.sort_key) for _, g in sorted(groups.items())]


# ---------------------------------------------------------------------------------------------
# Text.


def _texts(f: Finding) -> dict[str, str]:
    ex = explanations()
    base = dict(ex["categories"].get(f.category, {}))
    for key in (f.rule, f.name):
        base.update(ex["rules"].get(key, {}))
    return base


_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_GPU_WORDS = re.compile(r"\bCUDA\b|\bwarps?\b|\bGPU\b")


_GPU_ASIDE = re.compile(r"\s*\([^()]*(?:\bCUDA\b|\bGPU\b|\bwarps?\b)[^()]*\)")


def without_cuda(text: str) -> str:
    """The text minus the asides and clauses that talk about a CUDA kernel (for a port reviewed without one)."""
    out = []
    for sentence in _SENTENCE.split(_GPU_ASIDE.sub("", text)):
        if not _GPU_WORDS.search(sentence):
            out.append(sentence)
            continue
        kept = [c for c in sentence.rstrip(".").split("; ") if not _GPU_WORDS.search(c)]
        if kept:
            out.append("; ".join(kept).rstrip() + ".")
    return " ".join(out)


def _render(f: Finding, field: str, t: Target, n: int, cuda: bool = True) -> str:
    texts = _texts(f)
    src = (None if cuda else texts.get(f"{field}_nocuda")) or texts.get(field)
    if not src:
        return ""
    text = render_text(src, t=t, f=f, ev=f.evidence, n=n)
    return text if cuda else without_cuda(text)


def _loc(f: Finding) -> str:
    if not f.file:
        return ""
    name = PurePath(f.file).name
    if not f.line:
        return name
    if f.end_line and f.end_line != f.line:
        return f"{name}:{f.line}-{f.end_line}"
    return f"{name}:{f.line}"


def _fmt_speedup(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") + "x"


def _lead(f: Finding) -> bool:
    """The statement the run confirmed as the cause (evidence reconciliation), not a symptom of it."""
    return bool(f.evidence.get("root_cause_lead"))


def _contradicted(f: Finding) -> str | None:
    """The run's evidence against a static claim, when reconciliation cleared it."""
    rec = f.evidence.get("reconciled") or {}
    return rec.get("evidence") if rec.get("status") == "contradicted" else None


def _relocated(f: Finding) -> str | None:
    """The run's evidence that moved a finding off the line a generic explanation would blame (an allocation)."""
    rec = f.evidence.get("reconciled") or {}
    return rec.get("evidence") if rec.get("status") == "relocated" else None


def _primary(group: list[Finding]) -> Finding:
    """The finding that leads an item: among the most severe, a confirmed root cause first, then the finding
    the others name as their cause (an out-of-bounds read before the NaN output it produced), else the one
    whose category most of the group agrees on (a partly-written output merged with five tail findings is
    a tail problem)."""
    top = min(f.severity.rank for f in group)
    votes: dict[str, int] = {}
    for f in group:
        votes[f.category] = votes.get(f.category, 0) + 1
    named = {f.evidence.get("cause_rule") for f in group} - {None}
    return max((f for f in group if f.severity.rank == top),
               key=lambda f: (diagnosis_of(f) is not None, _lead(f), f.rule in named, votes[f.category]))


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")


def _same_advice(a: str, b: str) -> bool:
    """Two fix texts that give the same advice in other words (most of the shorter one's words appear in
    the longer one): one of them is enough in an item."""
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    small, big = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
    return bool(small) and len(small & big) / len(small) >= 0.6


def item_for(group: list[Finding], t: Target, cuda: bool = True) -> AssessmentItem:
    """The drafted item for one group of findings (title, what, why, fix, profiling); `cuda=False` for a port
    reviewed without a CUDA file (no text about a CUDA kernel that is not there)."""
    primary = _primary(group)
    group = [primary] + [f for f in group if f is not primary]  # the root cause leads, its symptoms follow
    n = len(group)
    cleared = _contradicted(primary) if len(group) == 1 else None
    title = (f"{primary.rule} {primary.name.replace('-', ' ')}: not borne out by the run" if cleared else
             _render(primary, "title", t, n, cuda) or primary.name.replace("-", " ").capitalize())
    locs = [loc for loc in dict.fromkeys(_loc(f) for f in group) if loc]
    if locs:
        title += f" ({', '.join(locs[:3])}{', ...' if len(locs) > 3 else ''})"

    what_parts = []
    for f in group:
        where = f" at {_loc(f)}" if _loc(f) else ""
        line = f"{f.id} [{f.severity.value}, {f.rule} {f.name}{where}]: {f.message}"
        for r in f.related:
            line += f" (see {PurePath(r.file).name}:{r.line}{': ' + r.message if r.message else ''})"
        what_parts.append(line)
    what = "\n".join(what_parts)

    whys: list[str] = []
    placed = next((f for f in group if _relocated(f)), None)  # the run's placement explains the whole item
    for f in ([placed] if placed is not None else group):
        text = (f"The run checked this claim: {_contradicted(f)}." if _contradicted(f) else
                f"The run places it: {_relocated(f)}." if _relocated(f) else _render(f, "why", t, n, cuda))
        if text and text not in whys:
            whys.append(text)
    why = " ".join(whys[:MAX_WHY_PARTS]) or taxonomy.category_description(primary.category)

    fixes: list[str] = []
    # a confirmed root cause's fix covers its symptoms; a cause the trace measured (evidence `cause`: PERF104's
    # K tile) covers the findings of its own category; otherwise every finding's own fix is listed
    measured = next((g for g in group if g.evidence.get("cause") and g.fix), None)
    fixers = ([g for g in group if _lead(g)] or
              ([measured] + [g for g in group if g.category != measured.category] if measured else group))
    for f in fixers:
        text = ((f.fix or "").strip() if cuda else without_cuda((f.fix or "").strip())) or _render(f, "fix", t, n, cuda)
        if text and not any(_same_advice(text, seen) for seen in fixes):
            fixes.append(text)
    # "nothing to change in the kernel" (one transfer already moves whole rows) beside another finding's change
    # to make reads as a contradiction: the change is the item's advice, the whole-rows fact stays in `what`
    fixes = [x for x in fixes if not x.startswith("Nothing to change")] or fixes
    fix = " Also: ".join(fixes) if fixes else "See the rule documentation (`nki-assist explain " + primary.rule + "`)."
    diff = proven_diff(primary) if diagnosis_of(primary) is not None else None
    if diff:  # the repair a re-run of every size proved leads the advice, as the diff itself
        fix = f"Proven by re-running all sizes:\n```diff\n{diff.rstrip()}\n```" + (
            "" if fix == diff or _same_advice(fix, diff) else f"\n{fix}")

    profiling = _render(primary, "profiling", t, n, cuda)
    gains = [(f.est_speedup, f.id) for f in group if f.est_speedup]
    if gains:
        best, fid = max(gains)
        profiling = f"The cost model estimates {_fmt_speedup(best)} from this change ({fid}). " + profiling
    return AssessmentItem(
        finding_ids=[f.id for f in group],
        priority=0,
        criterion=primary.criterion,
        title=title,
        what=what,
        why=why,
        fix=fix,
        profiling=profiling.strip(),
    )


def _group_key(group: list[Finding]) -> tuple:
    primary = group[0]
    return (
        min(f.severity.rank for f in group),
        taxonomy.criterion_rank(primary.criterion),
        -max((f.est_speedup or 0.0) for f in group),
        primary.sort_key(),
    )


# ---------------------------------------------------------------------------------------------
# Rubric.

_VERIFIED_BY = {
    "migration-correctness": "numerics",
    "numerical-accuracy": "numerics",
    "hardware-utilization": "performance",
}


def unverified(review: Review, criterion: str) -> str | None:
    """Why a criterion could not be checked by execution (None when it was)."""
    section = _VERIFIED_BY.get(criterion)
    if section and getattr(review, section) is None:
        return f"{section} were not run" if section == "numerics" else "no performance estimate"
    return None


def score_cap(review: Review, criterion: str) -> int:
    """The highest score the findings allow for a criterion (used to check LLM scores too)."""
    fs = [f for f in review.findings if f.criterion == criterion]
    if any(f.severity is Severity.ERROR for f in fs):
        return 1
    if any(f.severity is Severity.WARNING for f in fs):
        return 3
    return 3 if unverified(review, criterion) else 4


def _score(review: Review, criterion: str) -> tuple[int, list[Finding]]:
    fs = [f for f in review.findings if f.criterion == criterion]
    errors = [f for f in fs if f.severity is Severity.ERROR]
    warnings = [f for f in fs if f.severity is Severity.WARNING]
    if len(errors) >= 2:
        return 0, fs
    if errors:
        return 1, fs
    if len(warnings) >= 2:
        return 2, fs
    if warnings:
        w = warnings[0]
        small = w.est_speedup is not None and w.est_speedup < 1.1
        return (3 if small else 2), fs
    return score_cap(review, criterion), fs


def _count(fs: list[Finding], sev: Severity) -> str:
    n = sum(1 for f in fs if f.severity is sev)
    plural = "s" if n != 1 and sev is not Severity.INFO else ""
    return f"{n} {sev.value}{plural}" if n else ""


def rubric_scores(review: Review, rubric: Rubric) -> list[RubricScore]:
    """One score per scored criterion, by rule from the findings; the rationale names them."""
    out = []
    for c in rubric.scored():
        score, fs = _score(review, c.id)
        if fs:
            counts = ", ".join(x for x in (_count(fs, s) for s in Severity) if x)
            named = "; ".join(f"{f.id} {f.name}" for f in fs[:4]) + ("; ..." if len(fs) > 4 else "")
            rationale = f"Scored {score} from the findings: {counts} ({named})."
        else:
            rationale = f"Scored {score}: the checks that ran found no {c.id} issue."
        why_not = unverified(review, c.id)
        if why_not and all(f.severity is Severity.INFO for f in fs):
            rationale += f" Capped at {score_cap(review, c.id)}: {why_not}, so this is not verified by execution."
        out.append(RubricScore(criterion=c.id, score=score, rationale=rationale))
    return out


# ---------------------------------------------------------------------------------------------
# Assessment.


def causes_first(groups: list[list[Finding]]) -> list[list[Finding]]:
    """A group holding the cause another group names (evidence `symptom_of`) moves just before that group."""
    out = list(groups)
    for g in list(out):
        for f in g:
            ref = f.evidence.get("symptom_of")
            if not isinstance(ref, dict):
                continue
            cause = next((c for c in out if any(x.rule == ref.get("rule") and x.line == ref.get("line")
                                                 and x.file == f.file for x in c)), None)
            if cause is not None and cause is not g and out.index(cause) > out.index(g):
                out.remove(cause)
                out.insert(out.index(g), cause)
    return out


def diagnosis_first(groups: list[list[Finding]]) -> list[list[Finding]]:
    """The group holding the diagnosis (feedback/lead.py) leads the assessment, whatever its severity."""
    hit = next((g for g in groups if any(diagnosis_of(f) is not None for f in g)), None)
    return groups if hit is None else [hit] + [g for g in groups if g is not hit]


def draft(review: Review, rubric: Rubric, target: Target) -> Assessment:
    groups = diagnosis_first(causes_first(sorted(group_findings(list(review.findings)), key=_group_key)))
    items = []
    for prio, group in enumerate(groups, 1):
        item = item_for(group, target, cuda=review.port.cuda is not None)
        item.priority = prio
        items.append(item)
    verdict = verdict_for(list(review.findings))
    counts = {s: sum(1 for f in review.findings if f.severity is s) for s in Severity}
    blocking = [
        f"{it.title.split(' (')[0]} [{', '.join(it.finding_ids)}]"
        for it, g in zip(items, groups)
        if any(f.severity is Severity.ERROR for f in g)
    ][:3]
    first_other = next(
        ((it, g) for it, g in zip(items, groups) if all(f.severity is not Severity.ERROR for f in g)), None
    )
    top_other = ""
    if first_other and verdict != "approve-with-nits":
        it, g = first_other
        gain = max((f.est_speedup or 0.0) for f in g)
        top_other = f"{it.title.split(' (')[0]} [{', '.join(it.finding_ids)}]" + (
            f", estimated {_fmt_speedup(gain)}" if gain else ""
        )
    missing = sorted({why for c in taxonomy.rubric_criteria() if (why := unverified(review, c))})
    summary = environment().get_template("drafter/summary.md.j2").render(
        verdict=verdict,
        n_error=counts[Severity.ERROR],
        n_warning=counts[Severity.WARNING],
        n_info=counts[Severity.INFO],
        blocking=blocking,
        top_other=top_other,
        unverified=missing,
    )
    lead = next((f for f in groups[0] if diagnosis_of(f) is not None), None) if groups else None
    summary = " ".join(summary.split())
    if lead is not None:
        summary = f"{diagnosis_sentence(lead)} {summary}"
    return Assessment(
        drafter="deterministic",
        verdict=verdict,
        summary=summary,
        items=items,
        rubric=rubric_scores(review, rubric),
        llm=None,
        prompt_version=prompt_version(),
        rubric_name=rubric.label,
    )
