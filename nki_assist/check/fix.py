"""`check --fix`: apply the selected fixes of a file's findings and re-check until nothing changes.

Above check.py (it re-runs the check) and autofix/ (it applies the edits autofix built).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .autofix import apply_fixes, selected_fixes
from .engine import check_text
from ..findings import Finding

MAX_ROUNDS = 10  # a fix that enables another (two NKI504 imports) needs a second round


@dataclass
class FixOutcome:
    text: str  # the fixed text (the input when nothing applied)
    fixed: list[Finding] = field(default_factory=list)  # findings whose fix was applied
    result: Any = None  # the check_text FileResult of the final text

    @property
    def changed(self) -> bool:
        return bool(self.fixed)


def fix_text(path: str, text: str, options, unsafe: bool = False) -> FixOutcome:
    """Apply every selected fix of `path`'s findings, re-checking after each round, and return the
    final text with the check of it. Findings without a fix, and fixes that conflict, stay."""
    outcome = FixOutcome(text=text)
    result = check_text(path, text, options)
    for _ in range(MAX_ROUNDS):
        chosen = selected_fixes(result.findings, unsafe)
        if not chosen:
            break
        new_text, applied = apply_fixes(outcome.text, [fx for _, fx in chosen])
        if not applied or new_text == outcome.text:
            break
        ids = {id(fx) for fx in applied}
        outcome.fixed += [f for f, fx in chosen if id(fx) in ids]
        outcome.text = new_text
        result = check_text(path, new_text, options)
    outcome.result = result
    return outcome
