"""The mechanical LLM reply: what a model that only restates the findings would write.

One item per finding in priority order, keeping the finding's severity and criterion, with `what` = the
finding's message and `fix` = its fix (the diagnosis, feedback/lead.py, first); title, why and profiling are the deterministic drafter's text
for that one finding, and the verdict, summary and rubric are the deterministic draft's. Every such
reply must pass the grounding check (tests/feedback/test_feedback_grounding_property.py); the eval
suite's `--llm replay --replies mechanical` scores it against gold.
"""

from __future__ import annotations

from ..api.hardware import Target
from ..schema import Review
from .drafter import draft, item_for
from .lead import diagnosis_of
from .reply import AssessmentReply, ReplyItem, ReplyScore
from .rubric import Rubric


def mechanical_reply(review: Review, rubric: Rubric, target: Target) -> AssessmentReply:
    base = draft(review, rubric, target)
    items = []
    # F1..Fn are in priority order (errors first); the diagnosis, when there is one, leads
    ordered = sorted(review.findings, key=lambda f: diagnosis_of(f) is None)
    for prio, f in enumerate(ordered, 1):
        drafted = item_for([f], target, cuda=review.port.cuda is not None)
        items.append(ReplyItem(
            finding_ids=[f.id], priority=prio, criterion=f.criterion, severity=f.severity.value,
            title=drafted.title, what=f.message, why=drafted.why, fix=(f.fix or "").strip() or drafted.fix,
            profiling=drafted.profiling,
        ))
    return AssessmentReply(verdict=base.verdict, summary=base.summary, items=items,
                           rubric=[ReplyScore(**s.model_dump()) for s in base.rubric])
