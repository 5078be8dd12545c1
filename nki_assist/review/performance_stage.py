"""The review's performance stage: the cost model's estimate for each size that ran, the retile plan, and the
resource peaks that the report shows."""

from __future__ import annotations

from typing import Any

from ..api.hardware import Target
from ..findings import Finding
from ..numerics.registry import TRAINIUM
from ..schema import Performance, Review
from .options import ReviewOptions, _rebase


def _peaks(run, target: Target) -> dict[str, Any] | None:
    if run is None:
        return None

    # deferred: imported while the kernel runs ahead (review start-up)
    from ..numerics.portrun import peaks_summary

    peaks = peaks_summary(run.peaks, target)
    peaks["sbuf_percent"] = round(peaks["sbuf_percent"], 1)
    peaks["psum_percent"] = round(peaks["psum_percent"], 1)
    return {"status": run.status, **peaks, "instructions": len(run.trace)}


def _with_retile_plan(findings: list[Finding], res, target: Target) -> list[Finding]:
    """SIM104 (SBUF over budget) gets a concrete banding plan computed from the run that overflowed."""
    over = [s for s in res.sizes if (r := s.runs.get(TRAINIUM.name)) is not None and r.trace
            and any(f.rule == "SIM104" for f in r.findings)]
    if not over or not any(f.rule == "SIM104" for f in findings):
        return findings
    # deferred: imported while the kernel runs ahead (review start-up)
    from .. import perf
    sr = over[-1]  # the largest size that overflowed: a band that fits it fits the smaller ones
    plan = perf.plan_sbuf_retile(sr.runs[TRAINIUM.name], target)
    if plan is None:
        return findings
    text = perf.plan_text(plan)
    evidence = {"retile_plan": {**plan.to_json(), "size": sr.size}}
    return [f.model_copy(update={"fix": text, "evidence": {**f.evidence, **evidence}}) if f.rule == "SIM104" else f
            for f in findings]


# Simulator errors that mean the kernel does not fit or compile as written (no meaningful time estimate).
_CANNOT_RUN = frozenset({"SIM101", "SIM102", "SIM104", "SIM105", "SIM106", "SIM119"})


_ESTIMATES = ("bounds", "estimated_mfu_percent", "hfu_estimated_percent", "mbu_estimated_percent", "roofline", "comparison")


def _performance(spec, res, opts: ReviewOptions, target: Target, review: Review, plots: dict[str, bytes],
                 nki_disp: str) -> list[Finding]:

    # deferred: imported while the kernel runs ahead (review start-up)
    from .. import perf

    # the spec's own sizes: a size the review added is there to tell roles apart, not to be costed
    ran = [s for s in res.user_sizes() if (r := s.runs.get(TRAINIUM.name)) is not None and r.status == "ok" and r.trace]
    if not ran:
        review.notes.append("performance: no size ran to completion with a trace; no estimate")
        return []
    sr = max(ran, key=lambda s: spec.input_bytes(spec.size(s.size)))
    run = sr.runs[TRAINIUM.name]
    out_bytes = sum(o.nbytes for o in run.outputs)
    est = perf.estimate(run, target, min_input_bytes=spec.input_bytes(spec.size(sr.size)), min_output_bytes=out_bytes)
    findings = perf.perf_findings(est, run, target, file=nki_disp)
    if opts.profile:
        try:
            prof = perf.load_profile(opts.profile)
            est = perf.merge_profile(est, prof, kernel_name=spec.kernel_name)
            findings += perf.profile_findings(prof, file=nki_disp)
        except Exception as exc:
            review.notes.append(f"profile {opts.profile}: {exc}")
    performance = perf.to_performance(est)
    extra = dict(performance.model_extra or {})
    extra["size"] = sr.size
    # every other size that ran gets its own time (a grader compares sizes; the findings come from the largest)
    per_size = {}
    for s in ran:
        if s is sr:
            per_size[s.size] = performance.estimated_time_us
            continue
        r = s.runs[TRAINIUM.name]
        try:
            e = perf.estimate(r, target, min_input_bytes=spec.input_bytes(spec.size(s.size)),
                              min_output_bytes=sum(o.nbytes for o in r.outputs))
            per_size[s.size] = perf.to_performance(e).estimated_time_us
        except Exception as exc:  # one size's estimate failing leaves the others
            review.notes.append(f"performance: size {s.size} not estimated: {exc}")
    extra["per_size_us"] = per_size
    fields = performance.model_dump(exclude=set(extra))
    blocker = next((f for f in run.findings if f.rule in _CANNOT_RUN and f.severity.value == "error"), None)
    if blocker is not None:  # a time for code that cannot allocate or compile would only mislead
        why = f"not estimated: the kernel cannot run as written ({blocker.rule} at line {blocker.line})"
        fields.update(estimated_time_us=None, mfu_estimated_percent=None)
        for key in _ESTIMATES + ("per_size_us",):
            extra.pop(key, None)
        extra["label"], extra["not_estimated"] = why, blocker.rule
        review.notes.append(f"performance: {why}; engine busy times are shown for the code as written")
    review.performance = Performance(**{**fields, **extra})
    if opts.plots:
        try:
            plots.update(perf.render_plots(est))
        except Exception as exc:
            review.notes.append(f"performance plots failed: {exc}")
    return [_rebase(f, spec.nki_path, nki_disp) for f in findings]
