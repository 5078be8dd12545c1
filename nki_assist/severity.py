"""Finding severities, apart from the pydantic Finding model so that `check` can read cached findings,
rank them and choose its exit code without importing pydantic (start-up time)."""

from __future__ import annotations

from enum import Enum


class Severity(str, Enum):
    ERROR = "error"  # wrong results or will not compile
    WARNING = "warning"  # likely defect or large performance loss
    INFO = "info"  # expected difference, advice

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]

    def at_least(self, other: "Severity") -> bool:
        return self.rank <= other.rank
