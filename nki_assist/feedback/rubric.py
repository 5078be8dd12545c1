"""The review rubric as data: criteria with 0-4 level descriptors, loaded from TOML and validated."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .. import taxonomy
from .paths import data_dir

DEFAULT_RUBRIC = "default.toml"
LEVELS = (0, 1, 2, 3, 4)


class RubricError(ValueError):
    """A rubric file that cannot be read or does not validate (the CLI reports it as a usage error)."""


class Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    title: str
    subject: Literal["kernel", "assessment"]
    question: str
    levels: dict[int, str]

    @field_validator("levels")
    @classmethod
    def _all_levels(cls, levels: dict[int, str]) -> dict[int, str]:
        if sorted(levels) != list(LEVELS):
            raise ValueError(f"levels must be exactly 0-4, got {sorted(levels)}")
        if any(not text.strip() for text in levels.values()):
            raise ValueError("every level needs a descriptor")
        return dict(sorted(levels.items()))

    @model_validator(mode="after")
    def _kernel_criteria_are_taxonomy(self) -> "Criterion":
        if self.subject == "kernel" and self.id not in taxonomy.rubric_criteria():
            raise ValueError(
                f"kernel criterion {self.id!r} is not a taxonomy criterion "
                f"({', '.join(taxonomy.rubric_criteria())})"
            )
        return self


class Rubric(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    version: str = "1"
    description: str = ""
    criteria: list[Criterion] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> "Rubric":
        ids = [c.id for c in self.criteria]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate criteria: {', '.join(dupes)}")
        return self

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    def scored(self) -> list[Criterion]:
        """Criteria the drafter scores (subject kernel), in taxonomy priority order."""
        ks = [c for c in self.criteria if c.subject == "kernel"]
        return sorted(ks, key=lambda c: taxonomy.criterion_rank(c.id))

    def judged(self) -> list[Criterion]:
        """Criteria a written assessment is judged by (subject assessment)."""
        return [c for c in self.criteria if c.subject == "assessment"]

    def get(self, cid: str) -> Criterion | None:
        return next((c for c in self.criteria if c.id == cid), None)


def load_rubric(path: str | None = None) -> Rubric:
    """Load and validate a rubric TOML file (the bundled default when `path` is None)."""
    file = Path(path) if path else data_dir("rubrics") / DEFAULT_RUBRIC
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RubricError(f"rubric file {file} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RubricError(f"rubric file {file}: cannot read ({exc.__class__.__name__})") from None
    except tomllib.TOMLDecodeError as exc:
        raise RubricError(f"rubric file {file}: invalid TOML ({exc})") from None
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<top>'}: {e['msg']}" for e in exc.errors()
        )
        raise RubricError(f"rubric file {file}: {problems}") from None
