"""The LLM-facing reply model: flat and strict-mode friendly (every field required, no free dicts).

`schema.Assessment` carries drafter metadata the model must not write, and `AssessmentItem` has no
severity; this model adds `severity` per item so the grounding check can prove nothing was
downgraded, and is converted into the public Assessment after it passes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..schema import Assessment, AssessmentItem, RubricScore

# Bump when the reply model changes: part of the LLM cache key.
REPLY_SCHEMA_VERSION = "assessment-reply@2"  # @2: grammar dialects get the review-narrowed schema


class ReplyItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    finding_ids: list[str]
    priority: int
    criterion: str
    severity: Literal["error", "warning", "info"]
    title: str
    what: str
    why: str
    fix: str
    profiling: str


class ReplyScore(BaseModel):
    model_config = ConfigDict(extra="forbid")
    criterion: str
    score: int
    rationale: str


class AssessmentReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdict: Literal["block", "revise", "approve-with-nits", "approve"]
    summary: str
    items: list[ReplyItem]
    rubric: list[ReplyScore]


def to_assessment(reply: AssessmentReply, criteria_order: list[str]) -> Assessment:
    """Public Assessment from a reply that passed the grounding check (priorities renumbered 1..n)."""
    items = sorted(reply.items, key=lambda it: it.priority)
    rank = {c: i for i, c in enumerate(criteria_order)}
    scores = sorted(reply.rubric, key=lambda s: rank.get(s.criterion, len(rank)))
    return Assessment(
        drafter="llm",
        verdict=reply.verdict,
        summary=reply.summary.strip(),
        items=[
            AssessmentItem(**it.model_dump(exclude={"severity", "priority"}), priority=i)
            for i, it in enumerate(items, 1)
        ],
        rubric=[RubricScore(criterion=s.criterion, score=s.score, rationale=s.rationale) for s in scores],
    )


def from_assessment(assessment: Assessment, severities: dict[str, str]) -> AssessmentReply:
    """The reply an LLM would have to write to reproduce `assessment` (severities: finding id -> severity)."""
    items = []
    for it in assessment.items:
        sev = min((severities[f] for f in it.finding_ids if f in severities),
                  key=["error", "warning", "info"].index, default="info")
        items.append(ReplyItem(**it.model_dump(), severity=sev))
    return AssessmentReply(
        verdict=assessment.verdict,
        summary=assessment.summary,
        items=items,
        rubric=[ReplyScore(**s.model_dump()) for s in assessment.rubric],
    )
