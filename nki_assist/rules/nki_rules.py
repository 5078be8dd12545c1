"""Entry point of the static NKI rules: run every registered check over one parsed file."""

from __future__ import annotations

import logging

from ..findings import Finding, Severity
from ..hardware import Target
from ..parse.nki_model import NkiFile
from . import nki_dialect, nki_memory, nki_migration, nki_numerics, nki_tails, nki_utilization, nki_windows  # noqa: F401,E501
from .nki_common import CHECKS, emit

log = logging.getLogger(__name__)

__all__ = ["run_nki_rules", "rule_ids"]


def rule_ids() -> list[str]:
    return sorted({rid for rid, _ in CHECKS} | {"NKI001"})


def run_nki_rules(nki_file: NkiFile, target: Target) -> list[Finding]:
    """All static NKI findings for one file. A crashing check becomes an NKI001 note, never a raise."""
    findings: list[Finding] = []
    for line, col, msg in nki_file.syntax_errors[:20]:
        findings.append(emit("NKI001", nki_file, line, col, line, col + 1,
                             f"Syntax error: {msg}; checks skip the code that does not parse.",
                             {"line": line, "column": col, "error": msg}))
    for rule_id, fn in CHECKS:
        try:
            findings.extend(fn(nki_file, target))
        except Exception as exc:  # one broken check must not lose the others' findings
            log.warning("NKI check %s crashed on %s: %r", rule_id, nki_file.path, exc)
            findings.append(emit(
                "NKI001", nki_file, 1, 1, 1, 1,
                f"Internal error in check {rule_id} ({type(exc).__name__}: {exc}); its findings for this "
                "file are missing, the other checks ran.",
                {"check": rule_id, "exception": type(exc).__name__}, severity=Severity.INFO,
                fix="Report this file to the nki-assist maintainers.", confidence="low"))
    return findings
