"""Gold reviews (`evals/cases/<id>/gold.toml`): the issues an expert review must raise.

```toml
[case]
title = "GEMM port drops the bias"
clean = false                      # true for faithful ports: no issue may be reported
port = "port.toml"                 # default
families = ["matmul"]              # op families, for coverage
dialect = "new"                    # new | legacy
must_not_claim = ["numerically equivalent"]   # phrases the assessment must not contain

[[issues]]
id = "G1"
category = "missing-epilogue"
severity = "critical"              # critical | major | minor
file = "gemm_nki.py"
lines = [31, 35]                   # inclusive range (or a single line)
summary = "bias add of the CUDA epilogue is missing"
alternatives = ["output-mismatch"] # other categories accepted for this issue
```
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .. import taxonomy

GoldSeverity = Literal["critical", "major", "minor"]
SEVERITY_WEIGHT = {"critical": 3.0, "major": 2.0, "minor": 1.0}


class GoldError(Exception):
    """A gold file problem; the message names the file, the key and the problem."""


class GoldIssue(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    category: str
    criterion: str = ""
    severity: GoldSeverity
    file: str
    lines: tuple[int, int]
    summary: str
    alternatives: list[str] = Field(default_factory=list)

    @field_validator("lines", mode="before")
    @classmethod
    def _lines(cls, v):
        if isinstance(v, int):
            return (v, v)
        if isinstance(v, (list, tuple)) and len(v) == 1:
            return (v[0], v[0])
        return v

    @model_validator(mode="after")
    def _check(self) -> "GoldIssue":
        for cat in [self.category, *self.alternatives]:
            taxonomy.criterion_of(cat)  # ValueError names the unknown category
        expected = taxonomy.criterion_of(self.category)
        if self.criterion and self.criterion != expected:
            raise ValueError(f"category {self.category!r} belongs to {expected!r}, not {self.criterion!r}")
        self.criterion = expected
        if self.lines[0] < 1 or self.lines[1] < self.lines[0]:
            raise ValueError(f"lines {list(self.lines)} must be 1-based with start <= end")
        return self

    @property
    def categories(self) -> set[str]:
        return {self.category, *self.alternatives}

    @property
    def weight(self) -> float:
        return SEVERITY_WEIGHT[self.severity]


class CaseInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    clean: bool = False
    port: str = "port.toml"
    families: list[str] = Field(default_factory=list)
    dialect: str | None = None
    adversarial: bool = False
    must_not_claim: list[str] = Field(default_factory=list)


class Gold(BaseModel):
    model_config = ConfigDict(extra="forbid")
    case: CaseInfo
    issues: list[GoldIssue] = Field(default_factory=list)

    @model_validator(mode="after")
    def _clean(self) -> "Gold":
        if self.case.clean and self.issues:
            raise ValueError("a clean case lists no [[issues]]")
        ids = [i.id for i in self.issues]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate issue ids in {ids}")
        return self


def load_gold(path: str | Path) -> Gold:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GoldError(f"{path}: not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise GoldError(f"{path}: invalid TOML: {exc}") from None
    try:
        return Gold.model_validate(raw)
    except ValidationError as exc:
        msgs = [f"{path}: {'.'.join(str(p) for p in e['loc'])}: {e['msg'].removeprefix('Value error, ')}"
                for e in exc.errors()]
        raise GoldError("\n".join(msgs)) from None
