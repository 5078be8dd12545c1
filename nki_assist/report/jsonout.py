"""JSON: `{"schema": "nki-assist/check@1", "files", "findings", "cuda", "summary", ...}`."""

from __future__ import annotations

import json
from typing import Any

SCHEMA = "nki-assist/check@1"


def to_dict(report) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "target": report.target,
        "nki_version": list(getattr(report, "nki_versions", [])),  # per distinct choice: version, source, assumed
        "files": [r.status_json() for r in report.files],
        "findings": [f.to_json() for f in report.findings],
        "cuda": report.cuda_facts,
        "summary": report.summary(),
        "notes": list(report.notes),
        "errors": list(report.errors),
        "incomplete": list(getattr(report, "incomplete", [])),  # files not (fully) checked: the run fails
    }


def render(report, **_: Any) -> str:
    return json.dumps(to_dict(report), indent=2, ensure_ascii=False) + "\n"
