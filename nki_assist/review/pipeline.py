"""The review pipeline: a port (or bare files) in, one Review out.

Stages, each degrading to a note instead of failing the review:
  static checks on both files -> migration checks (CUDA vs NKI facts) -> numerics scenarios on every
  size (simulator in a child process) + attribution -> cost model on the largest size that ran ->
  evidence reconciliation (runtime claims of static findings checked against the run) ->
  prioritised findings F1..Fn -> written assessment (deterministic drafter or LLM, grounded).
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from ..api.hardware import Target, get_target
from ..findings import Finding, Severity, dedupe, file_scopes, group_repeats, prioritize
from ..numerics.distinct_size import DistinctPlan, plan
from ..numerics.guard import budget_bytes
from ..numerics.registry import TRAINIUM
from ..numerics.scenarios import Started, matrix_rows, run_scenarios
from ..numerics.spec import load_spec
from ..schema import Numerics, PortInfo, Review
from ..toolchain.registry import get_backend
from ..toolchain.sandbox import warm_sandbox
from .options import Progress, ReviewOptions, ReviewResult, _rebase, _rel_display
from .performance_stage import _peaks, _performance, _with_retile_plan
from .static_stage import _cuda_accumulation, _kernel_line, _migration, _read, _static


def review_port(spec_path: str, options: ReviewOptions | None = None, *, progress: Progress | None = None,
                cancel: threading.Event | None = None) -> ReviewResult:
    """Full review of a port spec. Raises SpecError (a usage problem) only for an invalid spec."""

    opts = options or ReviewOptions()
    spec = load_spec(spec_path)
    # one warm sandbox worker for every run of the review, started now: its imports overlap the static checks
    with warm_sandbox(opts.run and opts.backend == "builtin"):
        return _review_spec(spec_path, spec, opts, progress, cancel)


def _review_spec(spec_path: str, spec, opts: ReviewOptions, progress: Progress | None,
                 cancel: threading.Event | None) -> ReviewResult:
    t0 = time.perf_counter()
    say = progress or (lambda msg, pct: None)
    target = get_target(opts.target or spec.target)
    notes: list[str] = []
    base = Path(spec_path).parent

    def rel(p: Path | None) -> str | None:
        return None if p is None else str(p) if not p.is_relative_to(base) else str(p.relative_to(base))

    extra = None
    if opts.run:
        spec, opts, extra = _distinct_size(spec, opts, target)
    # the kernel runs begin now, in a thread, so the sandbox child works while this one checks the sources
    begun: list[Started] = []
    try:
        early = _start_runs(spec, opts, target, begun.append) if opts.run and cancel is None else None
        return _review_rest(spec_path, spec, opts, say, cancel, t0, target, notes, base, rel, early, extra)
    finally:
        for started in begun:
            started.abandon()  # nothing left running (it has ended unless the review raised on the way)


def _distinct_size(spec, opts: ReviewOptions, target: Target):
    """The spec with the distinct-dims size added when the sizes let two dimensions or tile constants coincide
    (numerics/distinct_size.py), the options selecting it too, and the plan (None when it is off)."""
    mode = opts.distinct_dims or spec.review.distinct_dims
    if mode == "off":
        return spec, opts, None
    selected = [spec.size(n) for n in opts.sizes] if opts.sizes else list(spec.sizes)
    try:
        p = plan(spec, selected, target, mode, limit_bytes=min(budget_bytes(opts.memory_mb) // 8, 64 << 20))
    except Exception as exc:  # a planning bug must not lose the review
        p = DistinctPlan(mode, notes=[f"distinct-dims: planning failed internally ({type(exc).__name__}: {exc})"])
    if p.size is None:
        return spec, opts, p
    spec = spec.with_added_size(p.size, p.why)
    if opts.sizes:
        opts = replace(opts, sizes=[*opts.sizes, p.size.name])
    return spec, opts, p


def _report_distinct(review: Review, p, findings: list[Finding]) -> list[Finding]:
    """The plan in the review (numerics.distinct_dims, the added size marked in numerics.sizes) and `findings`
    with each one of the added size saying why that size exists."""
    if review.numerics is None or (p.size is None and not p.coincidences):
        return findings
    review.numerics.distinct_dims = {**p.to_json(), "notes": p.notes}  # type: ignore[attr-defined]
    if p.size is None or p.refused:
        return findings
    for s in review.numerics.sizes:
        if s.get("name") == p.size.name:
            s["added_by"] = "nki-assist"
            s["why"] = p.why
    return [_name_added(f, p) for f in findings]


def _name_added(f: Finding, p) -> Finding:
    """A finding of the added size says why that size exists (it is not one the user wrote)."""
    name = p.size.name
    ev = f.evidence or {}
    sizes = ev.get("sizes") if isinstance(ev.get("sizes"), list) else [ev.get("size")]
    if name not in sizes:
        return f
    text = f" Size {name} ({p.dims_text()}) was added by nki-assist: {p.reason}."
    return f.model_copy(update={"message": f.message + text, "evidence": {**ev, "added_size": True}})


def _confirm_roles(findings: list[Finding], res, p) -> list[Finding]:
    """NKI211 (a tile constant on another axis's role) is latent at sizes where the constants coincide: when the
    added size, where they differ, is the one size that fails and every size of the spec passes, the run shows the
    mix-up; the static finding says so and becomes an error."""
    if res is None or p is None or p.size is None:
        return findings
    # deferred: imported while the kernel runs ahead (review start-up)
    from ..numerics.attribution import size_fails as fails

    by_name = {s.size: s for s in res.sizes}
    added = by_name.get(p.size.name)
    users = res.user_sizes()
    if added is None or not users or not fails(added) or any(fails(s) for s in users):
        return findings
    tiles = set(p.tiles) | {n for c in p.coincidences for n in c.names}
    out = []
    for f in findings:
        if f.rule == "NKI211" and (f.evidence or {}).get("constant") in tiles:
            text = (f"size {p.size.name} ({p.dims_text()}), added by nki-assist, fails while every size of the "
                    "spec passes")
            # the reconciliation's convention (reconcile._confirm): the confirmed statement leads its item's fix
            f = f.model_copy(update={
                "severity": Severity.ERROR, "confidence": "high",
                "message": f"{f.message} Confirmed by the run: {text}.",
                "evidence": {**f.evidence, "root_cause_lead": True,
                             "reconciled": {"status": "confirmed", "evidence": text, "sizes": [p.size.name]},
                             "run_evidence": {"status": "confirmed", "size": p.size.name,
                                              "bindings": p.size.bindings, "tiles": p.tiles}}})
        out.append(f)
    return out


def _review_rest(spec_path, spec, opts: ReviewOptions, say, cancel, t0, target, notes, base, rel,
                 early: Started | None, distinct=None) -> ReviewResult:
    nki_disp, cuda_disp = rel(spec.nki_path), rel(spec.cuda_path)
    port = PortInfo(name=spec.name, target=target.name, nki=nki_disp, cuda=cuda_disp, nki_kernel=spec.kernel_name,
                    cuda_kernel=spec.port.cuda_kernel, spec=str(spec_path))
    say("static checks", 2.0)
    unchecked: list[str] = []
    findings = _static(spec.nki_path, nki_disp, opts, target, notes, unchecked)
    if spec.cuda_path is not None:
        findings += _static(spec.cuda_path, cuda_disp, opts, target, notes, unchecked)
    say("migration checks", 6.0)
    findings += _migration(spec.nki_path, nki_disp, spec.cuda_path, cuda_disp, spec.kernel_name,
                           spec.port.cuda_kernel, target, notes)
    review = Review(port=port, notes=notes, unchecked=unchecked)
    planned = list(distinct.notes) if distinct is not None else []
    review.notes.extend(planned)
    plots: dict[str, bytes] = {}
    res = None
    if opts.run and not (cancel and cancel.is_set()):
        ran, res = _run_stages(spec, opts, target, review, plots, findings, nki_disp, base, say, cancel, early,
                               distinct)
        findings += ran if distinct is None else _report_distinct(review, distinct, ran)
        from .diagnosis_stage import diagnosis_findings  # deferred: only a review that ran the kernel needs it

        findings += diagnosis_findings(spec, res, opts, target, review, nki_disp, say)
        review.notes.extend(n for n in (distinct.notes if distinct is not None else []) if n not in planned)
    elif not opts.run:
        notes.append("kernel not executed (--no-run): numerics and performance are null")
    else:
        review.unchecked.append("review cancelled before the kernel ran")
    findings = _confirm_roles(_reconcile(findings, spec, res, review, _read(spec.nki_path) or ""), res, distinct)
    review.findings = _finalize(findings, base)
    say("drafting the assessment", 92.0)
    review.assessment = assess(review, opts, {nki_disp: _read(spec.nki_path) or "",
                                               **({cuda_disp: _read(spec.cuda_path) or ""} if cuda_disp else {})},
                                lambda m: say(m, 95.0))
    say("done", 100.0)
    return ReviewResult(review, plots, time.perf_counter() - t0)


# Utilization categories that the static rules see in the source and the cost model sees in the trace:
# the same phenomenon from two sides, written as one review item.
_PERF_TWINS = ("partition-underutilized", "tensor-engine-underutilized", "fp32-matmul")


def _link_root_causes(findings: list[Finding]) -> list[Finding]:
    """Mark findings that several stages report for one defect, so the drafter writes one item.

    An output the simulator saw partly unwritten (SIM112) while numerics found that only the ragged
    sizes fail (NUM103) is the unhandled tail, seen twice; a static utilization finding and the cost
    model's estimate of the same category are one problem with a measured price."""
    tails = {f.file for f in findings if f.rule == "NUM103"}
    twins = {(f.file, f.category) for f in findings if f.source == "static" and f.category in _PERF_TWINS}
    twins &= {(f.file, f.category) for f in findings if f.source == "cost-model"}
    out = []
    for f in findings:
        if f.rule in ("NUM103", "SIM112") and f.file in tails:
            f = f.model_copy(update={"evidence": {**f.evidence, "root_cause": "unhandled-ragged-tail"}})
        elif (f.file, f.category) in twins and f.source in ("static", "cost-model"):
            f = f.model_copy(update={"evidence": {**f.evidence, "root_cause": f"utilization:{f.category}"}})
        out.append(f)
    return out


def _finalize(findings: list[Finding], base: Path) -> list[Finding]:
    """Paths relative to the spec folder, duplicates dropped, ids F1..Fn in priority order."""

    # deferred: imported while the kernel runs ahead (review start-up)
    from .stage_links import link_stages

    findings = _link_root_causes(link_stages(findings))
    out = []
    for f in group_repeats(dedupe(findings), file_scopes(base)):
        if f.file and Path(f.file).is_absolute():
            p = Path(f.file)
            if p.is_relative_to(base.resolve()):
                f = f.model_copy(update={"file": str(p.relative_to(base.resolve()))})
        out.append(f)
    return prioritize(out)


def _reconcile(findings: list[Finding], spec, res, review: Review, nki_text: str) -> list[Finding]:
    """Static and migration claims checked against the run's evidence (nki_assist.review.reconcile)."""
    if res is None:
        return findings

    # deferred: imported while the kernel runs ahead (review start-up)
    from .reconcile import reconcile

    perf_size = (review.performance.model_extra or {}).get("size") if review.performance is not None else None
    try:
        return reconcile(findings, spec=spec, res=res, source=nki_text, perf_size=perf_size, notes=review.notes)
    except Exception as exc:  # a reconciliation bug must not lose the review
        review.notes.append(f"evidence reconciliation failed internally ({type(exc).__name__}: {exc})")
        return findings


def _gpu_precision(spec, opts: ReviewOptions) -> str | None:
    # no CUDA kernel: nothing to model on the GPU side (golden files, when given, still are the GPU output)
    return opts.gpu_precision or (_cuda_accumulation(spec.cuda_path, spec.port.cuda_kernel)
                                  if spec.cuda_path is not None else None)


def _start_runs(spec, opts: ReviewOptions, target: Target, begun: Callable[[Started], None]) -> Started | None:
    """The batched kernel and reference runs, begun in a thread (numerics.scenarios.Started). None when anything
    fails here: `_run_stages` then does it all again in order and reports the problem where it always did."""
    try:
        return Started(spec, target=target, backend=get_backend(opts.backend), sizes=opts.sizes,
                       gpu_precision=_gpu_precision(spec, opts), stochastic=opts.stochastic, timeout_s=opts.timeout_s,
                       memory_mb=opts.memory_mb, background=True, started=begun)
    except Exception:
        return None


def _prepare_later_stages() -> None:
    """What the stages after the kernel runs import and build, done while the sandbox child still works (this
    thread would otherwise wait for it): the cost model, reconciliation, the drafter, the result validators."""
    # deferred: these imports are the point of the function (they run here instead of after the child)
    from ..feedback import draft_assessment  # noqa: F401
    from ..numerics import portrun  # noqa: F401
    from ..toolchain import wire
    from . import reconcile, stage_links  # noqa: F401

    wire.prepare()


def _run_stages(spec, opts: ReviewOptions, target: Target, review: Review, plots: dict[str, bytes],
                prior: list[Finding], nki_disp: str, base: Path, say: Progress,
                cancel: threading.Event | None, early: Started | None = None, distinct=None) -> tuple[list[Finding], Any]:
    # deferred: imported while the kernel runs ahead (review start-up)
    from ..numerics.attribution import attribute, growth_fits, source_text
    from ..numerics.localize import cuda_store_line

    notes = review.notes
    try:
        backend = early.backend if early is not None else get_backend(opts.backend)
    except Exception as exc:
        notes.append(f"backend {opts.backend!r} unavailable ({exc}); kernel not executed")
        review.unchecked.append(f"kernel not executed: backend {opts.backend!r} unavailable")
        return [], None
    if not spec.reference_function:
        notes.append("the spec has no reference: numerics compare nothing")
    gpu = early.gpu_precision if early is not None else _gpu_precision(spec, opts)
    if early is not None:
        _prepare_later_stages()
    res = run_scenarios(spec, target=target, backend=backend, sizes=opts.sizes, gpu_precision=gpu,
                        stochastic=opts.stochastic, timeout_s=opts.timeout_s, memory_mb=opts.memory_mb,
                        progress=lambda m, p: say(f"numerics: {m}", 8.0 + 0.7 * p),
                        cancelled=(cancel.is_set if cancel else None), started=early)
    _drop_refused(res, distinct)
    out = _with_retile_plan([_rebase(f, spec.nki_path, nki_disp) for f in res.findings], res, target)
    review.unchecked.extend(_uncompared(spec, res, opts.sizes))
    kline = _kernel_line(spec.nki_path, spec.kernel_name)

    cuda_store = cuda_store_line(spec.cuda_path, _rel_display(spec.cuda_path, base), spec.port.cuda_kernel)
    out += attribute(res, [*prior, *out], nki_path=nki_disp, kernel_line=kline, cuda_store=cuda_store)
    fits = growth_fits(res)
    review.numerics = Numerics(
        sizes=[{"name": s.size, **s.bindings, "reduction_length": s.reduction_length} for s in res.sizes],
        scenarios=res.scenarios, matrix=matrix_rows(res), gpu_model_precision=gpu,
        reduction_symbol=res.reduction_symbol, growth=[f.to_json() for f in fits],
        tolerance={"rtol": spec.tolerance.rtol, "atol": spec.tolerance.atol},
        notes=res.notes + [n for s in res.sizes for n in s.notes], seconds=round(res.seconds, 3),
        gpu_model_sources={s.size: source_text(s.gpu_model_source) for s in res.sizes if s.gpu_model_source})
    review.resources = {s.size: _peaks(s.runs.get(TRAINIUM.name), target) for s in res.sizes}
    if opts.plots:
        from ..numerics.plots import error_plot  # deferred: plots only for md/html output

        png = error_plot(res)
        if png:
            plots["numerics.png"] = png
    say("cost model", 85.0)
    out += _performance(spec, res, opts, target, review, plots, nki_disp)
    return out, res


def _drop_refused(res, p) -> None:
    """An added size that the kernel's own assert refuses was no legal size (an assert the planner could not read):
    it leaves the results, and the plan says so, so that nothing is reported from a size the user never asked for."""
    for sr in [s for s in res.sizes if s.size in res.added]:
        run = sr.runs.get(TRAINIUM.name)
        if run is None or run.status != "kernel-error" or "AssertionError" not in f"{run.error or ''}":
            continue
        res.sizes.remove(sr)
        res.added.pop(sr.size)
        res.findings = [f for f in res.findings if not (f.evidence.get("added_size") and f.evidence.get("size") == sr.size)]
        if p is not None and p.size is not None and p.size.name == sr.size:
            p.refused = one_line_error(run.error)
            p.notes.append(f"distinct-dims: the kernel's assert refuses the added size {sr.size} ({p.dims_text()}): "
                           f"{p.refused}; it was dropped, so no run tells the coinciding roles apart")


def one_line_error(text: str | None) -> str:
    lines = [x.strip() for x in (text or "").strip().splitlines() if x.strip()]
    return (lines[-1] if lines else "AssertionError")[:200]


def _uncompared(spec, res, sizes: list[str] | None) -> list[str]:
    """Each selected size whose kernel outputs were not all compared with the reference, and why."""
    out = [f"size {name!r} skipped (too large for the memory limit)" for name in res.skipped]
    ran = {s.size: s for s in res.sizes}
    for name in sizes or [s.name for s in spec.sizes]:
        if name in res.skipped or (name in spec.added and name not in res.added):  # an added size it refused
            continue
        sr = ran.get(name)
        if sr is None:
            out.append(f"size {name!r} did not run" + (" (cancelled)" if res.cancelled else ""))
            continue
        trn = sr.runs.get(TRAINIUM.name)
        if not spec.reference_function:
            why = "the spec has no reference"
        elif not sr.reference.ok:
            why = f"reference {sr.reference.status}"
        elif trn is None or trn.status != "ok":
            why = f"kernel run ended with status {trn.status}" if trn else "kernel not run"
        elif sr.passed(TRAINIUM.name) is None:
            why = "output count or shape differs from the reference"
        else:
            continue
        out.append(f"size {name!r} not compared ({why})")
    return out


def assess(review: Review, opts: ReviewOptions, sources: dict[str, str], say_text=None):
    """The written assessment of `review` as `opts` asks for it (the drafter or the LLM); also how a batch
    re-drafts a captured review (batch/task.py)."""
    # deferred: imported while the kernel runs ahead (review start-up)
    from ..feedback import draft_assessment

    return draft_assessment(review, llm=opts.llm, model=opts.model, base_url=opts.base_url,
                            rubric_path=opts.rubric, sources=sources, cache_dir=opts.cache_dir,
                            timeout_s=opts.llm_timeout_s, progress=say_text, llm_mode=opts.llm_mode)


def review_files(nki: str, cuda: str | None = None, options: ReviewOptions | None = None, *,
                 nki_kernel: str | None = None, cuda_kernel: str | None = None,
                 progress: Progress | None = None) -> ReviewResult:
    """Review without a spec: static and migration checks only (nothing can run without inputs)."""
    t0 = time.perf_counter()
    opts = options or ReviewOptions()
    target = get_target(opts.target)
    notes: list[str] = []
    say = progress or (lambda msg, pct: None)
    nki_p, cuda_p = Path(nki), Path(cuda) if cuda else None
    say("static checks", 5.0)
    unchecked: list[str] = []
    findings = _static(nki_p, nki, opts, target, notes, unchecked)
    if cuda_p is not None:
        findings += _static(cuda_p, cuda, opts, target, notes, unchecked)
    findings += _migration(nki_p, nki, cuda_p, cuda, nki_kernel, cuda_kernel, target, notes)
    notes.append("no port spec: the kernel was not executed, so numerics and performance are null "
                 "(write a port.toml with inputs and sizes to get them)")
    review = Review(port=PortInfo(name=nki_p.stem, target=target.name, nki=nki, cuda=cuda, nki_kernel=nki_kernel,
                                  cuda_kernel=cuda_kernel), notes=notes, unchecked=unchecked)
    review.findings = _finalize(findings, Path("."))
    say("drafting the assessment", 80.0)
    review.assessment = assess(review, opts, {nki: _read(nki_p) or "", **({cuda: _read(cuda_p) or ""} if cuda else {})},
                                lambda m: say(m, 90.0))
    return ReviewResult(review, {}, time.perf_counter() - t0)
