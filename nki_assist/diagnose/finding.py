"""A Diagnosis as a review finding: DIAG101 (proven, on the edited line, the diff as its fix) or DIAG102 (info:
the anatomy and the ranked lines, never an accusation)."""

from __future__ import annotations

import re

from ..findings import Finding, RelatedLocation
from ..infra.redact import defuse_schemes, neutralise
from ..rules.registry import get
from .core import PROVEN, Diagnosis


_TAG = re.compile(r"<(?=[A-Za-z/!?])")  # what could open markup; `i_p < rem` stays as written


def _quoted(text: str) -> str:
    """Kernel text quoted in a message (inside code spans, which reports keep as they are): control characters
    shown, never acted on, and nothing a renderer that ignores code spans could take for a tag or a link."""
    return defuse_schemes(_TAG.sub("&lt;", neutralise(text)))


def to_finding(d: Diagnosis) -> Finding:
    cause = _quoted(d.cause)
    evidence = {**d.to_json(), "sizes": d.failing}
    related = [RelatedLocation(file=d.file, line=s.line, message=f"suspect: {', '.join(s.reasons[:2])}")
               for s in d.suspects[1:4] if s.line != d.line]
    if d.repair is not None:
        evidence["root_cause_lead"] = True
        # what the assessment's summary leads with (feedback/lead.py): the edit, and the error's shape
        shape = "; ".join([a.summary for a in d.anatomy[:1]] + ([d.contrast.text()] if d.contrast.items else []))
        evidence["diagnosis"] = {"cause": _quoted(f"{d.repair.edit.what} makes every size pass"),
                                 "pattern": _quoted(shape), "proven": True}
        return get("DIAG101").finding(
            f"Root cause of the failing size(s) {', '.join(d.failing)}: {cause}", file=d.file, line=d.line,
            category=d.category, confidence="high", fix=f"{PROVEN}:\n{d.repair.diff}", evidence=evidence,
            related=related)
    return get("DIAG102").finding(
        f"Size(s) {', '.join(d.failing)} fail and pass elsewhere; {cause}", file=d.file, line=d.line,
        confidence="low", evidence=evidence, related=related)
