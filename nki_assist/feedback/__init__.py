"""Feedback: rubric-aligned written assessments from verified findings.

    draft_assessment(review)                 deterministic drafter (default, offline)
    draft_assessment(review, llm="openai")   LLM drafter, grounding-checked, falls back to deterministic
    load_rubric(path)                        the rubric (bundled default or a user TOML file)
"""

from __future__ import annotations

from typing import Callable

from ..findings import prioritize
from ..api.hardware import DEFAULT_TARGET, TARGETS, get_target
from ..schema import Assessment, Review
from .cache import default_cache_dir
from .drafter import draft, verdict_for
from .prompts import prompt_version
from .rubric import Rubric, RubricError, load_rubric


__all__ = [
    "Assessment", "Rubric", "RubricError", "default_cache_dir", "draft_assessment", "load_rubric",
    "prompt_version", "verdict_for", "LLM_CHOICES",
]

LLM_CHOICES = ("none", "openai")


def _numbered(review: Review) -> Review:
    """Findings need unique ids F1..Fn in priority order; renumber a review that lacks them."""
    ids = [f.id for f in review.findings]
    if all(ids) and len(set(ids)) == len(ids):
        return review
    return review.model_copy(update={"findings": prioritize(review.findings)})


def draft_assessment(review: Review, *, llm: str = "none", model: str | None = None,
                     base_url: str | None = None, rubric_path: str | None = None,
                     sources: dict[str, str] | None = None, cache_dir: str | None = None,
                     timeout_s: float = 60.0, max_retries: int = 2,
                     progress: Callable[[str], None] | None = None, llm_mode: str = "auto") -> Assessment:
    """Write the assessment of `review`.

    llm="none": deterministic drafter. llm="openai": OpenAI-compatible Chat Completions
    (OPENAI_API_KEY, OPENAI_BASE_URL or `base_url`, `model`); the reply must pass the grounding
    check (one repair round), else the deterministic draft is returned with drafter="fallback".
    `sources` maps file paths (as findings cite them) to text, for prompt excerpts and grounding.
    `cache_dir` enables the on-disk reply cache (None: no cache; see default_cache_dir()).
    `llm_mode`: how the server is asked for structured output ("auto" negotiates; llm_modes.MODES forces one).
    Raises RubricError for a bad rubric file and ValueError for an unknown `llm`.
    """
    if llm not in LLM_CHOICES:
        raise ValueError(f"unknown llm {llm!r}; choose one of {', '.join(LLM_CHOICES)}")
    rubric = load_rubric(rubric_path)
    review = _numbered(review)
    target = get_target(review.port.target if review.port.target in TARGETS else DEFAULT_TARGET)
    if llm == "none":
        return mark_incomplete(review, draft(review, rubric, target))

    from .llm import draft_with_llm  # deferred: only --llm openai needs the LLM drafter (start-up time)

    return mark_incomplete(review, draft_with_llm(review, rubric, target, sources=sources, model=model,
                                                  base_url=base_url, cache_dir=cache_dir, timeout_s=timeout_s,
                                                  max_retries=max_retries, progress=progress,
                                                  llm_mode=llm_mode))


def mark_incomplete(review: Review, assessment: Assessment) -> Assessment:
    """A review that did not check everything it was asked to never passes: its verdict becomes
    `incomplete` (unless an error already blocks it) and the summary says what was not checked."""
    if not review.unchecked or assessment.verdict == "block":
        return assessment
    shown = "; ".join(review.unchecked[:3]) + (f"; and {len(review.unchecked) - 3} more" if len(review.unchecked) > 3 else "")
    rest = assessment.summary.split(": ", 1)[-1] if ": " in assessment.summary[:24] else assessment.summary
    summary = (f"Incomplete: not everything was checked ({shown}), so this review cannot pass the port. "
               f"Of what ran: {rest}")
    return assessment.model_copy(update={"verdict": "incomplete", "summary": summary})


def __getattr__(name: str):
    if name == "draft_with_llm":  # kept importable from here; loaded on first use
        from .llm import draft_with_llm

        return draft_with_llm
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
