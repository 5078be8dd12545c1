"""The one currency of nki-assist: a verified Finding (JSON contract in design.md)."""

from __future__ import annotations

from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from . import taxonomy
from .severity import Severity  # noqa: F401 (re-exported: the Finding contract's severity)


Source = Literal["static", "migration", "simulation", "numerics", "cost-model", "profile", "toolchain"]
Confidence = Literal["high", "medium", "low"]


class RelatedLocation(BaseModel):
    """Another place a finding refers to, e.g. the CUDA line a migration finding compares with."""

    model_config = ConfigDict(extra="forbid")
    file: str
    line: int = Field(ge=1)
    message: str = ""


class Edit(BaseModel):
    """Replace the text from (line, column) up to (end_line, end_column), exclusive, with `content`.

    Positions are 1-based, columns in characters (like Finding.column). `old_text` is the text the
    span held when the fix was computed: an editor must not apply the edit once it differs.
    """

    model_config = ConfigDict(extra="forbid")
    line: int = Field(ge=1)
    column: int = Field(ge=1)
    end_line: int = Field(ge=1)
    end_column: int = Field(ge=1)
    content: str
    old_text: str | None = None


Applicability = Literal["safe", "unsafe"]


class Fix(BaseModel):
    """A mechanical edit that resolves a finding (ruff-like). `safe` keeps the kernel's meaning and
    is applied by `check --fix`; `unsafe` may change results or performance and needs --unsafe-fixes."""

    model_config = ConfigDict(extra="forbid")
    message: str
    applicability: Applicability
    edits: list[Edit] = Field(min_length=1)


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = ""  # F1..Fn, assigned in priority order by assign_ids()
    rule: str
    name: str
    category: str
    criterion: str = ""  # derived from category when empty
    severity: Severity
    source: Source = "static"
    file: str | None = None
    line: int | None = Field(default=None, ge=1)  # 1-based
    end_line: int | None = Field(default=None, ge=1)
    column: int | None = Field(default=None, ge=1)  # 1-based, in characters
    end_column: int | None = Field(default=None, ge=1)
    message: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    fix: str | None = None
    est_speedup: float | None = None
    confidence: Confidence = "high"
    related: list[RelatedLocation] = Field(default_factory=list)
    autofix: Fix | None = None  # additive: left out of the JSON form when None

    @model_serializer(mode="wrap")
    def _omit_empty_autofix(self, handler) -> dict[str, Any]:
        data = handler(self)
        if data.get("autofix", True) is None:
            del data["autofix"]
        return data

    @model_validator(mode="after")
    def _check_taxonomy(self) -> "Finding":
        expected = taxonomy.criterion_of(self.category)
        if not self.criterion:
            self.criterion = expected
        elif self.criterion != expected:
            raise ValueError(f"category {self.category!r} belongs to {expected!r}, not {self.criterion!r}")
        if self.end_line is None and self.line is not None:
            self.end_line = self.line
        return self

    def sort_key(self) -> tuple:
        """Priority: severity, then criterion (correctness first), then estimated gain, then place."""
        return (
            self.severity.rank,
            taxonomy.criterion_rank(self.criterion),
            -(self.est_speedup or 0.0),
            self.file or "",
            self.line or 0,
            self.column or 0,
            self.rule,
        )

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def prioritize(findings: Iterable[Finding]) -> list[Finding]:
    """Sort by priority and number F1..Fn; returns new objects, inputs untouched."""
    ordered = sorted(findings, key=Finding.sort_key)
    return [f.model_copy(update={"id": f"F{i}"}) for i, f in enumerate(ordered, 1)]


def dedupe(findings: Iterable[Finding]) -> list[Finding]:
    """Drop exact repeats (same rule, file, line, message), keeping the first."""
    seen: set[tuple] = set()
    out = []
    for f in findings:
        key = (f.rule, f.file, f.line, f.column, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
