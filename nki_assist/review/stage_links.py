"""Links between findings that different stages report for one defect (review level).

- A loop-invariant load (NKI109, static, any sizes) and the cost model's redundant-DMA estimate (PERF101,
  the spec's sizes) on the same load line: NKI109 records the measured bytes in `confirmed_by`.
- A format-range constant (MIG112) and the NaN/Inf its cast produced (NUM104, whose sanitizer fault sits
  on the MIG112 cast line).
Linked findings share an evidence `root_cause`, so the drafter writes them as one item.
- A short K tile (PERF104 with cause `contraction`, from the trace) and the small operand loads it forces
  (NKI108 on those load lines): the loads get `symptom_of`, so the drafter puts the cause's item first
  and the load item says what it is a symptom of (they stay two items: NKI108 also groups other DMAs).
- A static performance finding (info by the severity policy) and a cost-model warning on its line or of its
  category: the static one becomes a warning carrying the estimated gain (bound_costs.py).
"""

from __future__ import annotations

from ..findings import Finding
from .bound_costs import promote_bound_costs


def _with(f: Finding, **evidence) -> Finding:
    return f.model_copy(update={"evidence": {**f.evidence, **evidence}})


def link_stages(findings: list[Finding]) -> list[Finding]:
    return _contraction_symptoms(_format_overflow(_redundant_loads(promote_bound_costs(findings))))


def _contraction_symptoms(findings: list[Finding]) -> list[Finding]:
    causes = [f for f in findings if f.rule == "PERF104" and f.evidence.get("cause") == "contraction"]
    if not causes:
        return findings
    out = []
    for f in findings:
        c = next((c for c in causes if f.rule == "NKI108" and c.file == f.file
                  and f.line in (c.evidence.get("operand_load_lines") or [])
                  and f.evidence.get("partitions") == c.evidence.get("median_k")), None)
        if c is not None:
            k = c.evidence["median_k"]
            f = f.model_copy(update={
                "message": f"{f.message} It moves {k} partitions because the matmul at line {c.line} contracts "
                           f"{k} rows: a symptom of that K tile (PERF104).",
                "evidence": {**f.evidence, "symptom_of": {"rule": c.rule, "line": c.line}}})
        out.append(f)
    return out


def _redundant_loads(findings: list[Finding]) -> list[Finding]:
    perf = [f for f in findings if f.rule == "PERF101" and isinstance(f.evidence.get("by_line"), dict)]
    if not perf:
        return findings
    out, confirmed = [], set()
    for f in findings:
        if f.rule == "NKI109":
            for p in perf:
                row = p.evidence["by_line"].get(str(f.line))
                if p.file == f.file and row and row.get("loaded_bytes", 0) > row.get("unique_bytes", 0):
                    f = _with(f, confirmed_by={"rule": "PERF101", "line": f.line, **row},
                              root_cause="redundant-hbm-loads")
                    confirmed.add(id(p))
                    break
        out.append(f)
    return [_with(f, root_cause="redundant-hbm-loads") if id(f) in confirmed else f for f in out]


def _format_overflow(findings: list[Finding]) -> list[Finding]:
    casts = {(f.file, f.evidence.get("cast_line")): f.evidence.get("root_cause")
             for f in findings if f.rule == "MIG112" and f.evidence.get("root_cause")}
    if not casts:
        return findings
    out = []
    for f in findings:
        fault = f.evidence.get("first_fault") if f.rule == "NUM104" else None
        key = (f.file, fault.get("line")) if isinstance(fault, dict) else None
        if key in casts:
            f = _with(f, root_cause=casts[key])
        out.append(f)
    return out
