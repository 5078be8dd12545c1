"""Severity policy at review level (issue 41): a static performance observation is info, unless the cost model
says that very thing bounds the kernel. When a cost-model warning (it carries its estimated gain) names the same
category in the same file, or charges the same DMA instruction (one line, both DMA categories), the static
finding becomes a warning with that gain in its message and `est_speedup`; advice variants (one-off broadcasts,
operand tiles, sizes the data fixes) stay info."""

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


_DMA = frozenset({"small-dma", "redundant-dma", "dma-transpose", "strided-access"})


def _same_cost(bound: Finding, f: Finding) -> bool:
    """The cost model's finding is about this very cost: the same category, or the same DMA instruction (one
    line, both DMA categories: the transfer the estimate charges). An fp32 matmul on the line of a short-K
    estimate is a different cost."""
    if bound.category == f.category:
        return True
    return bound.line == f.line and bound.category in _DMA and f.category in _DMA


def promote_bound_costs(findings: list[Finding]) -> list[Finding]:
    bounds = [f for f in findings if f.source == "cost-model" and f.severity is Severity.WARNING
              and f.est_speedup is not None]
    if not bounds:
        return findings
    out = []
    for f in findings:
        if _performance(f):
            b = next((b for b in bounds if b.file == f.file and _same_cost(b, f)), None)
            if b is not None:
                f = f.model_copy(update={
                    "severity": Severity.WARNING, "est_speedup": b.est_speedup,
                    "message": f"{f.message} The cost model estimates this bounds the kernel at the spec's sizes "
                               f"({b.rule} line {b.line}: up to {b.est_speedup:.2f}x).",
                    "evidence": {**f.evidence, "bound_by": {"rule": b.rule, "line": b.line,
                                                            "est_speedup": b.est_speedup}}})
        out.append(f)
    return out
