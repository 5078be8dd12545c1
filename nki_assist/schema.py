"""JSON contracts shared by review, feedback, report, eval and LSP (design.md "Review (JSON form)").

Kept at the bottom of the dependency graph so every layer can read and write them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .findings import Finding

REVIEW_SCHEMA = "nki-assist/review@1"

# `incomplete`: no error, but part of what the review was asked to check did not run (a skipped or
# uncompared size, a file the static checks skipped): it never passes (`Review.unchecked` says what).
Verdict = Literal["block", "incomplete", "revise", "approve-with-nits", "approve"]
Drafter = Literal["deterministic", "llm", "fallback"]


class PortInfo(BaseModel):
    name: str
    target: str = "trn2"
    cuda: str | None = None
    nki: str | None = None
    cuda_kernel: str | None = None
    nki_kernel: str | None = None
    spec: str | None = None  # path of port.toml when given


class AssessmentItem(BaseModel):
    """One point of the written review. Flat for OpenAI strict structured outputs."""

    model_config = ConfigDict(extra="forbid")
    finding_ids: list[str]
    priority: int
    criterion: str
    title: str
    what: str
    why: str
    fix: str
    profiling: str


class RubricScore(BaseModel):
    model_config = ConfigDict(extra="forbid")
    criterion: str
    score: int = Field(ge=0, le=4)
    rationale: str


class LlmMeta(BaseModel):
    model: str | None = None
    base_url: str | None = None
    prompt_version: str | None = None
    cached: bool = False
    attempts: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    fallback_reason: str | None = None
    violations: list[str] = Field(default_factory=list)
    # how the server was asked for structured output (feedback/llm_modes.py) and what it turned down first
    mode: str | None = None
    mode_rejections: list[str] = Field(default_factory=list)
    compact_prompt: bool = False  # the shorter prompt, for a model whose context window the full one overflows
    seconds: float | None = None  # wall time of the LLM requests (cache hits: 0)
    # per reply, in order: the kinds of its grounding-check violations (feedback/grounding.KINDS; "truncated" or
    # "schema" when it did not parse; [] when it passed): what the model gets wrong, also when repaired
    reply_kinds: list[list[str]] = Field(default_factory=list)


class Assessment(BaseModel):
    drafter: Drafter = "deterministic"
    verdict: Verdict
    summary: str
    items: list[AssessmentItem] = Field(default_factory=list)
    rubric: list[RubricScore] = Field(default_factory=list)
    llm: LlmMeta | None = None
    prompt_version: str | None = None
    rubric_name: str | None = None


class EngineTime(BaseModel):
    busy_us: float = 0.0
    instructions: int = 0
    model_config = ConfigDict(extra="allow")


class Performance(BaseModel):
    estimated_time_us: float | None = None
    bottleneck: str | None = None
    mfu_estimated_percent: float | None = None
    hbm_read_bytes: int = 0
    hbm_write_bytes: int = 0
    engines: dict[str, EngineTime] = Field(default_factory=dict)
    measured: dict[str, Any] | None = None  # profile summary metrics, when --profile was given
    model_config = ConfigDict(extra="allow")  # bounds, roofline, assumptions, notes, plots ...


class Numerics(BaseModel):
    sizes: list[dict[str, Any]] = Field(default_factory=list)
    scenarios: list[str] = Field(default_factory=list)
    matrix: list[dict[str, Any]] = Field(default_factory=list)
    model_config = ConfigDict(extra="allow")  # growth fits, attribution notes, plots ...


class Review(BaseModel):
    schema_: str = Field(default=REVIEW_SCHEMA, alias="schema")
    port: PortInfo
    findings: list[Finding] = Field(default_factory=list)
    numerics: Numerics | None = None
    performance: Performance | None = None
    resources: dict[str, Any] | None = None  # peak SBUF/PSUM per size
    assessment: Assessment | None = None
    notes: list[str] = Field(default_factory=list)  # why a section is null, degraded stages
    unchecked: list[str] = Field(default_factory=list)  # what was asked but not checked -> "incomplete"
    model_config = ConfigDict(populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    def finding(self, fid: str) -> Finding | None:
        return next((f for f in self.findings if f.id == fid), None)
