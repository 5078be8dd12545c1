"""The diagnosis: the finding that names a failure's root-cause line, its cause, the pattern of wrong outputs
that shows it and, when a re-run proved one, the fix as a unified diff. The written assessment leads with it
and the language server offers its diff as a code action.

A finding is the diagnosis when its evidence carries `diagnosis` (a dict: `cause`, `pattern`, `diff`,
`proven`), or when its rule is in DIAGNOSIS_RULES (the diagnosis stage's own rule ids are added here, in this
one place). Its proven fix is `evidence["diagnosis"]["diff"]`, `evidence["proven_fix"]`,
`evidence["repair"]["diff"]` (DIAG101), or the finding's `fix` when that is a unified diff.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

DIAGNOSIS_RULES: frozenset[str] = frozenset({"DIAG101"})  # the diagnosis stage (nki_assist/diagnose) proved a repair

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", re.M)


def diagnosis_of(f: Any) -> dict[str, Any] | None:
    """The diagnosis a finding carries ({} for a diagnosis rule without details), else None."""
    ev = getattr(f, "evidence", None) or {}
    d = ev.get("diagnosis")
    if isinstance(d, dict):
        return d
    if d or getattr(f, "rule", None) in DIAGNOSIS_RULES:
        return {}
    return None


def is_unified_diff(text: str | None) -> bool:
    return bool(text) and text.lstrip().startswith(("--- ", "diff ")) and _HUNK.search(text) is not None


def proven_diff(f: Any) -> str | None:
    """The unified diff a re-run proved for this finding, if any."""
    ev = getattr(f, "evidence", None) or {}
    d = ev.get("diagnosis") if isinstance(ev.get("diagnosis"), dict) else {}
    repair = ev.get("repair") if isinstance(ev.get("repair"), dict) else {}  # the diagnosis stage's (DIAG101)
    for text in (d.get("diff"), ev.get("proven_fix"), repair.get("diff"), getattr(f, "fix", None)):
        if isinstance(text, str) and is_unified_diff(text):
            return text
    return None


def diagnosis_sentence(f: Any) -> str:
    """One sentence for the summary: line, cause, the pattern that shows it, the proven fix."""
    d = diagnosis_of(f) or {}
    where = f"{PurePath(f.file).name}:{f.line}" if getattr(f, "file", None) and f.line else f"line {f.line}"
    cause = str(d.get("cause") or f.message).strip().rstrip(".")
    text = f"Diagnosis: {where}, {cause}"
    if d.get("pattern"):
        text += f" (shown by: {str(d['pattern']).strip().rstrip('.')})"
    if proven_diff(f):
        text += "; a fix is proven by re-running every size (see the item's diff)"
    return text + "."
