"""Entry point of the static NKI rules: run every registered check over one parsed file."""

from __future__ import annotations

from ..findings import Finding, Severity
from ..hardware import Target
from ..parse.nki_model import NkiFile
from . import nki_dialect, nki_memory, nki_migration, nki_numerics, nki_tails, nki_utilization, nki_windows  # noqa: F401,E501
from .nki_common import CHECKS, emit
from .runner import Check, crash_message

__all__ = ["run_nki_rules", "rule_ids"]


def rule_ids() -> list[str]:
    return sorted(CHECKS.rule_ids() | {"NKI001"})


def run_nki_rules(nki_file: NkiFile, target: Target) -> list[Finding]:
    """All static NKI findings for one file. A crashing check becomes an NKI001 note, never a raise."""
    findings: list[Finding] = []
    for line, col, msg in nki_file.syntax_errors[:20]:
        findings.append(emit("NKI001", nki_file, line, col, line, col + 1,
                             f"Syntax error: {msg}; checks skip the code that does not parse.",
                             {"line": line, "column": col, "error": msg}))

    def crashed(check: Check, exc: Exception) -> Finding:
        return emit("NKI001", nki_file, 1, 1, 1, 1, crash_message(check, exc),
                    {"check": check.name, "rules": list(check.rules), "exception": type(exc).__name__},
                    severity=Severity.INFO, fix="Report this file to the nki-assist maintainers.", confidence="low")

    return findings + CHECKS.run(nki_file, target, on_crash=crashed)
