"""The review's diagnosis stage: a failing size diagnosed to its root-cause line (nki_assist.diagnose).

Runs after the numerics scenarios; its repair re-runs use the review's warm sandbox and are bounded by
`ReviewOptions.repair_budget_s` per failing size (printed in the review's notes)."""

from __future__ import annotations

from ..findings import Finding


def diagnosis_findings(spec, res, opts, target, review, display: str, say) -> list[Finding]:
    """The DIAG finding of the failing sizes ([] when none fails, or the stage is off or fails internally)."""
    if res is None or opts.repair_budget_s is None or opts.repair_budget_s < 0:
        return []
    # deferred: imported only when the kernel ran
    from ..diagnose import diagnose, to_finding

    try:
        d = diagnose(spec, res, display=display, target=target.name, budget_s_per_size=opts.repair_budget_s,
                     memory_mb=opts.memory_mb, progress=lambda m: say(f"diagnosis: {m}", 88.0))
    except Exception as exc:  # a diagnosis bug must not lose the review
        review.notes.append(f"diagnosis failed internally ({type(exc).__name__}: {exc})")
        return []
    if d is None:
        return []
    review.notes.append(f"diagnosis of size(s) {', '.join(d.failing)}: repair budget {opts.repair_budget_s:g} s per "
                        f"failing size; {d.budget_text()}"
                        + (f"; proven fix at line {d.line}" if d.proven else "; no proven fix"))
    return [to_finding(d)]
