"""Finding -> LSP Diagnostic (code, docs link, source, related places, fix payload in `data`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Sequence

from lsprotocol import types
from pygls import uris
from pygls.workspace.position_codec import PositionCodec

from .positions import UTF16, to_lsp_range

SOURCE = "nki-assist"
UNUSED_SUPPRESSION = "NA100"

SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


@cache  # the registry is fixed once loaded; this runs for every diagnostic of every publish
def docs_url(rule: str) -> str | None:
    try:
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        from nki_assist.rules.registry import get

        return get(rule).docs_url
    except Exception:  # noqa: BLE001 - unknown rule or registry missing: no link
        return None


def _related(finding: Any, doc_path: str | None) -> list[types.DiagnosticRelatedInformation]:
    out = []
    for rel in getattr(finding, "related", None) or []:
        target = Path(rel.file)
        if not target.is_absolute():
            if not doc_path:
                continue  # an untitled document has no directory to resolve against
            target = Path(doc_path).parent / target
        line = max(rel.line - 1, 0)
        location = types.Location(
            uri=uris.from_fs_path(str(target)) or target.as_uri(),
            range=types.Range(start=types.Position(line=line, character=0),
                              end=types.Position(line=line + 1, character=0)),
        )
        out.append(types.DiagnosticRelatedInformation(location=location, message=rel.message or finding.message))
    return out


def finding_data(finding: Any, language: str | None) -> dict[str, Any]:
    """What a code action needs later; the client hands it back unchanged."""
    data: dict[str, Any] = {"rule": finding.rule, "name": finding.name, "language": language,
                            "line": finding.line}
    if finding.fix:
        data["fix"] = finding.fix
    autofix = getattr(finding, "autofix", None)
    if autofix is not None:
        data["autofix"] = autofix.model_dump(mode="json")
    return data


def to_diagnostic(finding: Any, lines: Sequence[str], *, doc_path: str | None, language: str | None,
                  codec: PositionCodec = UTF16) -> types.Diagnostic:
    severity = getattr(finding.severity, "value", finding.severity)
    href = docs_url(finding.rule)
    message = finding.message
    diagnostic = types.Diagnostic(
        range=to_lsp_range(lines, finding.line, finding.column, finding.end_line, finding.end_column, codec),
        message=message,
        severity=SEVERITY.get(severity, types.DiagnosticSeverity.Warning),
        code=finding.rule,
        code_description=types.CodeDescription(href=href) if href else None,
        source=SOURCE,
        related_information=_related(finding, doc_path) or None,
        data=finding_data(finding, language),
    )
    if finding.rule == UNUSED_SUPPRESSION:
        diagnostic.tags = [types.DiagnosticTag.Unnecessary]
    return diagnostic


def note_diagnostic(message: str) -> types.Diagnostic:
    """A tool note (e.g. file skipped) shown at the top of the file, without a rule code."""
    start = types.Position(line=0, character=0)
    return types.Diagnostic(range=types.Range(start=start, end=start), message=message,
                            severity=types.DiagnosticSeverity.Information, source=SOURCE)
