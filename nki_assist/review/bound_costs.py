"""Severity policy at review level (issue 41): a static performance observation is info, unless the cost model
says that very thing bounds the kernel. When a cost-model warning (it carries its estimated gain) sits on the same
line as a static performance finding, or names the same category in the same file, the static finding becomes a
warning with that gain in its message and `est_speedup`; advice variants (one-off broadcasts, operand tiles, sizes
the data fixes) stay info."""

from __future__ import annotations

from ..findings import Finding, Severity
from ..rules.registry import get


def _performance(f: Finding) -> bool:
    try:
        spec = get(f.rule)
    except KeyError:
        return False
    ev = f.evidence if isinstance(f.evidence, dict) else {}
    return (spec.kind == "performance" and f.source in ("static", "migration") and f.severity is Severity.INFO
            and not ev.get("advice") and not ev.get("one_off"))


def promote_bound_costs(findings: list[Finding]) -> list[Finding]:
    bounds = [f for f in findings if f.source == "cost-model" and f.severity is Severity.WARNING
              and f.est_speedup is not None]
    if not bounds:
        return findings
    out = []
    for f in findings:
        if _performance(f):
            b = next((b for b in bounds if b.file == f.file and (b.line == f.line or b.category == f.category)),
                     None)
            if b is not None:
                f = f.model_copy(update={
                    "severity": Severity.WARNING, "est_speedup": b.est_speedup,
                    "message": f"{f.message} The cost model estimates this bounds the kernel at the spec's sizes "
                               f"({b.rule} line {b.line}: up to {b.est_speedup:.2f}x).",
                    "evidence": {**f.evidence, "bound_by": {"rule": b.rule, "line": b.line,
                                                            "est_speedup": b.est_speedup}}})
        out.append(f)
    return out
