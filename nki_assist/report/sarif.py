"""SARIF 2.1.0 (OASIS errata01 schema) for GitHub code scanning and other SARIF viewers.

One run; `tool.driver.rules` is the whole registry so `ruleIndex` is stable across runs. Regions are
1-based with columns in Unicode code points. `partialFingerprints.primaryLocationLineHash` hashes the
rule, the file and the stripped source line (plus its occurrence number), so alerts survive edits
that move lines. Honoured suppression comments appear as results with an `inSource` suppression.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .. import __version__

from ..rules.registry import all_rules

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/nki-assist/nki-assist"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _uri(path: str) -> tuple[str, str | None]:
    """Artifact URI and base id: relative paths stay relative to %SRCROOT% (the working directory)."""
    p = Path(path)
    if p.is_absolute():
        return p.as_uri(), None
    return p.as_posix().removeprefix("./"), "%SRCROOT%"


def _location(path: str, line: int | None, column: int | None = None, end_line: int | None = None,
              end_column: int | None = None) -> dict[str, Any]:
    uri, base = _uri(path)
    artifact: dict[str, Any] = {"uri": uri}
    if base:
        artifact["uriBaseId"] = base
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if line is not None:
        region: dict[str, Any] = {"startLine": line}
        if column is not None:
            region["startColumn"] = column
        if end_line is not None and end_line >= line:
            region["endLine"] = end_line
        same_line = region.get("endLine", line) == line
        if end_column is not None and not (same_line and column is not None and end_column < column):
            region["endColumn"] = end_column
        physical["region"] = region
    return {"physicalLocation": physical}


class _Lines:
    """Source lines for fingerprints, read once per file; missing files hash without text."""

    def __init__(self) -> None:
        self._cache: dict[str, list[str]] = {}

    def get(self, path: str, line: int | None) -> str:
        if path not in self._cache:
            try:
                self._cache[path] = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                self._cache[path] = []
        lines = self._cache[path]
        return lines[line - 1].strip() if line and 0 < line <= len(lines) else ""


def _fingerprinter():
    lines, seen = _Lines(), {}

    def fingerprint(f) -> str:
        text = lines.get(f.file, f.line) if f.file else ""
        key = (f.rule, f.file or "", text)
        seen[key] = seen.get(key, 0) + 1
        digest = hashlib.sha256("\0".join([*map(str, key), str(seen[key])]).encode()).hexdigest()[:16]
        return f"{digest}:{seen[key]}"

    return fingerprint


def _rules() -> tuple[list[dict[str, Any]], dict[str, int]]:

    rules, index = [], {}
    for i, spec in enumerate(all_rules()):
        index[spec.id] = i
        rule: dict[str, Any] = {
            "id": spec.id,
            "name": spec.name,
            "shortDescription": {"text": spec.summary},
            "fullDescription": {"text": spec.summary},
            "helpUri": spec.docs_url,
            "help": {"text": f"{spec.summary} Fix: {spec.fix}" if spec.fix else spec.summary},
            "defaultConfiguration": {"level": LEVELS[spec.severity.value]},
            "properties": {"category": spec.category, "criterion": spec.criterion, "source": spec.source,
                           "tags": [spec.criterion, spec.category]},
        }
        rules.append(rule)
    return rules, index


def _result(f, rule_index: dict[str, int], fingerprint, suppressed: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"ruleId": f.rule, "level": LEVELS[f.severity.value], "message": {"text": f.message}}
    if f.rule in rule_index:
        result["ruleIndex"] = rule_index[f.rule]
    if f.file:
        result["locations"] = [_location(f.file, f.line, f.column, f.end_line, f.end_column)]
        result["partialFingerprints"] = {"primaryLocationLineHash": fingerprint(f)}
    related = []
    for i, r in enumerate(f.related):
        loc = _location(r.file, r.line)
        loc["id"] = i
        if r.message:
            loc["message"] = {"text": r.message}
        related.append(loc)
    if related:
        result["relatedLocations"] = related
    props: dict[str, Any] = {"category": f.category, "criterion": f.criterion, "source": f.source,
                             "confidence": f.confidence}
    if f.evidence:
        props["evidence"] = f.evidence
    if f.fix:
        props["fix"] = f.fix
    if f.est_speedup is not None:
        props["est_speedup"] = f.est_speedup
    result["properties"] = props
    if f.autofix is not None and f.file:
        result["fixes"] = [_fix(f)]
    if suppressed:
        result["suppressions"] = [{"kind": "inSource"}]
    return result


def _fix(f) -> dict[str, Any]:
    """Finding.autofix as a SARIF fix (one artifactChange; replacements over the original text)."""
    artifact = _location(f.file, None)["physicalLocation"]["artifactLocation"]
    replacements = [{"deletedRegion": {"startLine": e.line, "startColumn": e.column, "endLine": e.end_line,
                                       "endColumn": e.end_column},
                     "insertedContent": {"text": e.content}} for e in f.autofix.edits]
    return {"description": {"text": f.autofix.message},
            "artifactChanges": [{"artifactLocation": artifact, "replacements": replacements}],
            "properties": {"applicability": f.autofix.applicability}}


def to_dict(report) -> dict[str, Any]:
    rules, index = _rules()
    fingerprint = _fingerprinter()
    results = [_result(f, index, fingerprint) for f in report.findings]
    results += [_result(f, index, fingerprint, suppressed=True) for f in report.suppressed]
    notifications = [{"level": "note", "message": {"text": n}} for n in report.notes]
    notifications += [{"level": "error", "message": {"text": e}} for e in report.errors]
    incomplete = list(getattr(report, "incomplete", []))
    notifications += [{"level": "error", "message": {"text": f"incomplete: {line}"}} for line in incomplete]
    invocation: dict[str, Any] = {"executionSuccessful": not incomplete}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "nki-assist", "version": __version__, "semanticVersion": __version__,
                                "informationUri": INFORMATION_URI, "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
            "invocations": [invocation],
            "columnKind": "unicodeCodePoints",
            "results": results,
            "properties": {"target": report.target, "nki_version": list(getattr(report, "nki_versions", []))},
        }],
    }


def render(report, **_: Any) -> str:
    return json.dumps(to_dict(report), indent=2, ensure_ascii=False) + "\n"
