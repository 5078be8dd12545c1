"""Turn the scenario matrix into findings with a stated cause and the numbers as evidence.

The cause comes from which scenarios fail where: trainium fails but trainium-fp32 passes -> storage
precision; both fail -> algorithm; only ragged sizes fail -> boundary handling; NaN/Inf with a finite
reference -> overflow or uninitialized memory; error slope ~1 -> low-precision accumulation; a gap to
the GPU model within rounding -> accumulation order. Lines come from the static and simulation
findings that name the same cause, so a finding here confirms (and is merged with) the static one.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..findings import Finding
from ..rules import registry
import numpy as np

from ..contracts.tolerance import Agreement, GapVerdict, compare, gap_verdict
from .growth import LOW_PRECISION_SLOPE, GrowthFit, fit
from .localize import Located, mismatch_location, nonfinite_location, place, unwritten_anchor
from .scenarios import NumericsResult, SizeResult
from .registry import GPU_MODEL, TRAINIUM, TRAINIUM_FP32

PRECISION_CATEGORIES = ("catastrophic-cancellation", "low-precision-accumulation", "dtype-mismatch", "overflow-risk",
                        "fp8-range")
ALGORITHM_CATEGORIES = ("missing-epilogue", "indexing-error", "unused-input", "loop-carried-dependency",
                        "uninitialized-read", "missing-boundary-mask", "activation-approximation",
                        # precision defects that also break fp32 storage (E[x^2]-E[x]^2 at large mean, exp overflow)
                        "catastrophic-cancellation", "overflow-risk")
# A cause that explains elements nothing stored, not wrong values a store wrote (uninitialized memory
# can be stored out, so uninitialized-read stays a cause).
_UNWRITTEN_CAUSES = ("missing-boundary-mask",)
# Info notes of these categories explain ULP-level differences; they never cause a tolerance failure.
_NOT_A_CAUSE_WHEN_INFO = {"activation-approximation", "accumulation-order"}
# Causes that only act on a partial tile: they can explain a ragged-only failure, never an aligned one.
TAIL_CATEGORIES = ("missing-boundary-mask",)
NONFINITE_CATEGORIES = ("overflow-risk", "uninitialized-read")


def _ragged_symbols(res: NumericsResult, sr: SizeResult) -> dict[str, int]:
    """Symbols of `sr` bound to a value that is not a multiple of 128 and so leaves a partial tile.

    A value below 128 (a head dimension of 64) fits one tile and is only ragged when another size
    binds the same symbol to a multiple of 128 (the spec varies it on purpose)."""
    aligned_elsewhere = {k for o in res.user_sizes() if o is not sr for k, v in o.bindings.items() if v % 128 == 0}
    return {k: v for k, v in sr.bindings.items()
            if v > 1 and v % 128 and (v > 128 or k in aligned_elsewhere)}


def ragged_sizes(res: NumericsResult) -> set[str]:
    """Sizes with a tile-unaligned tail (see _ragged_symbols). A size the tool added divides every tile of the
    kernel by construction (distinct_size.py): never ragged."""
    return {sr.size for sr in res.user_sizes() if _ragged_symbols(res, sr)}


def size_fails(sr: SizeResult) -> bool:
    run = sr.runs.get(TRAINIUM.name)
    return ((run is not None and run.status != "ok") or sr.passed(TRAINIUM.name) is False
            or sr.passed(TRAINIUM_FP32.name) is False)


def _anchor(findings: Iterable[Finding], categories: tuple[str, ...], nki_path: str) -> Finding | None:
    """The first finding (priority order of `categories`) on the NKI file that names the cause."""
    pool = [f for f in findings if f.line and f.file and (f.file == nki_path or f.file.endswith(nki_path.split("/")[-1]))
            and not (f.severity.value == "info" and f.category in _NOT_A_CAUSE_WHEN_INFO)]
    pool.sort(key=lambda f: f.severity.rank)  # a defect, not an info note (e.g. a layout remark), names the cause
    for cat in categories:
        for f in pool:
            if f.category == cat:
                return f
    return None


def _without_tail(categories: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(c for c in categories if c not in TAIL_CATEGORIES)


def unwritten_elements(sr: SizeResult) -> int:
    """Output elements the trainium run never stored (SIM112 of that run)."""
    run = sr.runs.get(TRAINIUM.name)
    return sum(int(f.evidence.get("unwritten_elements") or 0) for f in (run.findings if run else [])
               if f.rule == "SIM112")


def _nonfinite_order(ag: Agreement, sr: SizeResult) -> tuple[str, ...]:
    """Which cause to look for first: NaN where the kernel left output unwritten is that gap (the simulator
    NaN-fills new memory); Inf, or NaN with everything written, is a value leaving the dtype's range."""
    if ag.nan_actual and unwritten_elements(sr):
        return ("uninitialized-read", "overflow-risk")
    return ("overflow-risk", "uninitialized-read")


def _fix_from(anchor: Finding | None, fallback: str) -> str:
    """The cause's own fix (written from its facts) when the attribution found one, else `fallback`."""
    return anchor.fix if anchor is not None and anchor.fix else fallback


def _worst(ags: list[Agreement | None]) -> Agreement | None:
    real = [a for a in ags if a is not None]
    return max(real, key=lambda a: (a.mismatch_fraction, a.max_abs if a.max_abs == a.max_abs else 0)) if real else None


def _ev(ag: Agreement | None, **extra: Any) -> dict[str, Any]:
    ev: dict[str, Any] = dict(extra)
    if ag is not None:
        ev.update(max_abs=ag.max_abs, max_rel=ag.max_rel, max_ulp=ag.max_ulp,
                  mismatch_fraction=round(ag.mismatch_fraction, 6), worst_index=list(ag.worst_index or ()),
                  rtol=ag.rtol, atol=ag.atol, output_dtype=ag.dtype)
    return ev


def _place(anchor: Finding | None, nki_path: str, kernel_line: int | None) -> dict[str, Any]:
    if anchor is not None:
        return {"file": anchor.file, "line": anchor.line, "end_line": anchor.end_line, "column": anchor.column,
                "confidence": "high"}
    return {"file": nki_path, "line": kernel_line, "confidence": "medium"}


def growth_fits(res: NumericsResult) -> list[GrowthFit]:
    fits = []
    for scenario in (TRAINIUM.name, TRAINIUM_FP32.name):
        lengths, errors = [], []
        for sr in res.user_sizes():
            ag = _worst(sr.agreement(scenario))
            if sr.reduction_length and ag is not None:
                lengths.append(sr.reduction_length)
                errors.append(ag.mean_abs)
        f = fit(lengths, errors, scenario)
        if f:
            fits.append(f)
    return fits


def _traced(sr: SizeResult, scenario: str, ag: Agreement | None, nki_path: str, cuda_store) -> Located:
    """The store behind the first element of `scenario` that differs from the reference (localize.py)."""
    if ag is None:
        return mismatch_location(None, None, 0.0, 0.0, nki_path)
    return mismatch_location(sr.runs.get(scenario), sr.reference.outputs, ag.rtol, ag.atol, nki_path, cuda_store)


def _traced_text(loc: Located) -> str:
    text = loc.evidence.get("producing_store_text")
    return f" The first differing element: {text}." if text else ""


def _oob_read(prior, nki_path: str):
    """The simulator's out-of-bounds read (SIM108) in the kernel file: it reads NaN, the first suspect of a NaN output."""
    name = nki_path.split("/")[-1]
    return next((f for f in prior if f.rule == "SIM108" and f.line and f.file
                 and (f.file == nki_path or f.file.endswith(name))), None)


def attribute(res: NumericsResult, prior: list[Finding], *, nki_path: str, kernel_line: int | None,
              cuda_store: tuple[str, int] | None = None) -> list[Finding]:
    """Findings explaining every failing scenario; `prior` are static/migration/simulation findings;
    `cuda_store` = (file, line) of the CUDA statement storing the output, named next to a mismatch."""
    out: list[Finding] = []
    ragged = ragged_sizes(res)
    tile_ragged = set(ragged)  # sizes with a partial tile, whether or not the boundary attribution applies
    # Ragged failures are explained by the boundary attribution only when an aligned size passes;
    # otherwise they are judged like every other size.
    aligned_pass = any(sr.reference.ok and sr.size not in ragged and not size_fails(sr) for sr in res.user_sizes())
    if not aligned_pass:
        ragged = set()
    aligned_fail_fp32 = []
    for sr in res.sizes:
        trn, fp32 = sr.passed(TRAINIUM.name), sr.passed(TRAINIUM_FP32.name)
        trn_run = sr.runs.get(TRAINIUM.name)
        if not sr.reference.ok:
            continue
        crashed = trn_run is not None and trn_run.status != "ok"
        if sr.size in ragged and (crashed or trn is False):
            continue  # handled below, together with the aligned sizes
        if trn is False and fp32 is True:
            anchor = _anchor(prior, PRECISION_CATEGORIES, nki_path)
            ag = _worst(sr.agreement(TRAINIUM.name))
            ag32 = _worst(sr.agreement(TRAINIUM_FP32.name))
            what = f"`{anchor.evidence.get('name') or anchor.name}` ({anchor.category}, line {anchor.line})" if anchor else "a low-precision intermediate"
            loc = _traced(sr, TRAINIUM.name, ag, nki_path, cuda_store)
            out.append(registry.get("NUM101").finding(
                f"Size {sr.size}: fails the tolerance with real storage dtypes (max abs {ag.max_abs:.3g}, "
                f"{ag.mismatch_fraction:.1%} of elements out) but passes with fp32 storage (max abs "
                f"{ag32.max_abs:.3g}); the rounding of {what} causes it.",
                category=anchor.category if anchor and anchor.category in PRECISION_CATEGORIES else "low-precision-accumulation",
                evidence=_ev(ag, size=sr.size, fp32_max_abs=ag32.max_abs, scenario="trainium vs trainium-fp32",
                             cause_rule=anchor.rule if anchor else None, **loc.evidence),
                fix=_fix_from(anchor, "Find the intermediate whose storage dtype rounds (run with fp32 storage and "
                                      "narrow one tile at a time), keep it in fp32 and round once at the end."),
                **place(loc, _place(anchor, nki_path, kernel_line), kernel_line, nki_path)))
        elif fp32 is False:
            aligned_fail_fp32.append(sr)
        nan_trn = _worst(sr.agreement(TRAINIUM.name))
        if nan_trn is not None and (nan_trn.nan_actual or nan_trn.inf_actual) and not (nan_trn.nan_expected or nan_trn.inf_expected):
            origin = nonfinite_location([sr.runs.get(TRAINIUM.name)], nki_path)
            unwritten = unwritten_elements(sr)
            if origin.line:  # the sanitizer traced the first instruction that produced them
                anchor = _anchor(prior, ("overflow-risk",), nki_path)
                cause = f"{origin.evidence['first_fault_text']}; later instructions carry them to the output"
                fallback = (f"Line {origin.line} produces the first non-finite value: keep that instruction's "
                            f"result within its dtype's range.")
            else:
                order = _nonfinite_order(nan_trn, sr)
                if sr.size not in tile_ragged:
                    order = _without_tail(order)
                oob = _oob_read(prior, nki_path)
                anchor = unwritten_anchor(origin, prior, nki_path) or oob or _anchor(prior, order, nki_path)
                uninit = anchor is not None and anchor.category == "uninitialized-read"
                cause = (f"the out-of-bounds read at line {oob.line}, which reads NaN past the tensor's end"
                         if anchor is oob and oob is not None else
                         f"{unwritten} output elements were never written" if uninit and unwritten else
                         "output elements no store wrote" if anchor is not None and anchor.rule == "SIM112" else
                         "memory read before it was written" if uninit else "values leaving the dtype's range")
                fallback = ("Find the statement that first produces a non-finite value (return intermediates as "
                            "extra outputs): an output element never written, or a value beyond the "
                            f"{nan_trn.dtype} range.")
            out.append(registry.get("NUM104").finding(
                f"Size {sr.size}: the output has {nan_trn.nan_actual} NaN and {nan_trn.inf_actual} Inf values "
                f"where the reference is finite ({cause}).",
                category=anchor.category if anchor and not origin.line else "overflow-risk",
                evidence=_ev(nan_trn, size=sr.size, nan=nan_trn.nan_actual, inf=nan_trn.inf_actual,
                             unwritten_elements=unwritten or None, cause_rule=anchor.rule if anchor else None,
                             **origin.evidence),
                fix=_fix_from(anchor, fallback),
                **place(origin, _place(anchor, nki_path, kernel_line), kernel_line, nki_path, prefer=True)))
    if aligned_fail_fp32:
        sr = aligned_fail_fp32[0]
        ag = _worst(sr.agreement(TRAINIUM_FP32.name))
        # The cause must fit the sizes that fail: a failure on a size with no partial tile is never a tail rule,
        # and a non-finite output is first an overflow or an unwritten region.
        cats = ALGORITHM_CATEGORIES
        if any(s.size not in tile_ragged for s in aligned_fail_fp32):
            cats = _without_tail(cats)
        nonfinite = ag is not None and (ag.nan_actual or ag.inf_actual) and not (ag.nan_expected or ag.inf_expected)
        if nonfinite:
            cats = _nonfinite_order(ag, sr) + tuple(c for c in cats if c not in NONFINITE_CATEGORIES)
        # NaN the run read past a tensor's end explain a non-finite output before any overflow rule does
        anchor = (_oob_read(prior, nki_path) if nonfinite else None) or _anchor(prior, cats, nki_path)
        sizes = ", ".join(s.size for s in aligned_fail_fp32)
        loc = _traced(sr, TRAINIUM_FP32.name, ag, nki_path, cuda_store)
        if loc.line is not None and anchor is not None and anchor.category in _UNWRITTEN_CAUSES:
            anchor = None  # a store wrote the first wrong element: a skipped tail is not why
        out.append(registry.get("NUM102").finding(
            f"Fails the tolerance even with fp32 storage on size(s) {sizes} (max abs {ag.max_abs:.3g}, "
            f"{ag.mismatch_fraction:.1%} of elements out, worst at {list(ag.worst_index or ())}): the "
            f"computation differs from the reference"
            + (f", consistent with {anchor.rule} {anchor.name} at line {anchor.line}." if anchor else ".")
            + _traced_text(loc),
            category=anchor.category if anchor else "output-mismatch",
            evidence=_ev(ag, sizes=[s.size for s in aligned_fail_fp32], scenario="trainium-fp32 vs reference",
                         cause_rule=anchor.rule if anchor else None, **loc.evidence),
            fix=_fix_from(anchor, f"Compare element {list(ag.worst_index or ())} of size {sr.size} by hand "
                                  f"(kernel {ag.worst_actual:.6g}, reference {ag.worst_expected:.6g}); return "
                                  "intermediates as extra outputs to find the first stage that differs."
                          if ag is not None and ag.worst_actual is not None and ag.worst_expected is not None else
                          "Return intermediates as extra outputs to find the first stage that differs."),
            **place(loc, _place(anchor, nki_path, kernel_line), kernel_line, nki_path)))
    out.extend(_ragged(res, ragged, prior, nki_path, kernel_line))
    out.extend(_growth(res, prior, nki_path, kernel_line))
    out.extend(_order_gap(res, [*prior, *out], nki_path, kernel_line))
    return out


def _ragged(res, ragged, prior, nki_path, kernel_line) -> list[Finding]:
    fails, passes = [], []
    for sr in res.user_sizes():
        if sr.reference.ok:
            (fails if size_fails(sr) else passes).append(sr)
    rag_fail = [s for s in fails if s.size in ragged]
    if not rag_fail or not any(s.size not in ragged for s in passes):
        return []
    anchor = _anchor(prior, ("missing-boundary-mask", "indexing-error"), nki_path)
    sr = rag_fail[0]
    run = sr.runs.get(TRAINIUM.name)
    ag = _worst(sr.agreement(TRAINIUM_FP32.name)) or _worst(sr.agreement(TRAINIUM.name))
    how = (f"the kernel stops with {run.status} ({(run.error or '').strip()[:120]})" if run is not None and run.status != "ok"
           else f"{ag.mismatch_fraction:.1%} of elements are wrong (max abs {ag.max_abs:.3g})" if ag else "it fails")
    odd = _ragged_symbols(res, sr)
    # A tail that is written, but at the wrong rows, is an offset bug, not a missing tail.
    misplaced = anchor is not None and anchor.category == "indexing-error"
    what = ("the tail tile is written at the wrong offset (" + f"{anchor.rule}, line {anchor.line})"
            if misplaced else "the tail tile is not handled")
    return [registry.get("NUM103").finding(
        f"Passes on aligned size(s) {', '.join(s.size for s in passes if s.size not in ragged)} but on ragged "
        f"size {sr.size} ({', '.join(f'{k}={v}' for k, v in odd.items())}) {how}: {what}.",
        evidence=_ev(ag, size=sr.size, ragged_bindings=odd, failing_sizes=[s.size for s in rag_fail],
                     status=run.status if run else None, cause_rule=anchor.rule if anchor else None),
        **({"category": anchor.category} if misplaced else {}),
        fix=_fix_from(anchor, f"Handle the partial tile of size {sr.size} "
                              f"({', '.join(f'{k} % 128 = {v % 128}' for k, v in odd.items())}): a ceiling trip count "
                              "with the last tile clamped, or a separate tail tile."),
        **_place(anchor, nki_path, kernel_line))]


def _growth(res, prior, nki_path, kernel_line) -> list[Finding]:
    fits = {f.scenario: f for f in growth_fits(res)}
    trn = fits.get(TRAINIUM.name)
    res.notes.extend(f"growth fit {f.scenario}: slope {f.slope:.2f} over {res.reduction_symbol}={list(f.lengths)}"
                     for f in fits.values())
    if trn is None or trn.slope < LOW_PRECISION_SLOPE:
        return []
    fp = fits.get(TRAINIUM_FP32.name)
    # The fp32-storage run growing as fast means the algorithm itself grows this way -- unless its
    # errors are mere fp32 roundoff, orders of magnitude below the real-dtype run's.
    fp_negligible = fp is not None and fp.errors[-1] < 0.01 * trn.errors[-1]
    if fp is not None and fp.slope >= LOW_PRECISION_SLOPE and not fp_negligible:
        return []
    anchor = _anchor(prior, ("low-precision-accumulation", "dtype-mismatch"), nki_path)
    return [registry.get("NUM105").finding(
        f"Output error grows with slope {trn.slope:.2f} in log-log over {res.reduction_symbol} = "
        f"{list(trn.lengths)} (mean abs error {trn.errors[0]:.3g} -> {trn.errors[-1]:.3g}); fp32 accumulation "
        f"grows ~0.5" + (f" (fp32-storage run: {fp.slope:.2f})" if fp else "") + ".",
        evidence={"slope": round(trn.slope, 3), "r2": round(trn.r2, 3), "lengths": list(trn.lengths),
                  "errors": list(trn.errors), "fp32_slope": round(fp.slope, 3) if fp else None,
                  "reduction_symbol": res.reduction_symbol, "threshold": LOW_PRECISION_SLOPE,
                  "cause_rule": anchor.rule if anchor else None},
        fix=_fix_from(anchor, "Keep the running sum over "
                              f"{res.reduction_symbol or 'the reduction'} in an fp32 tile and cast to the output "
                              "dtype once after the loop."),
        **_place(anchor, nki_path, kernel_line))]


_VERDICT_RANK = {"non-finite": 4, "beyond-rounding": 3, "precision-loss": 2, "storage-rounding": 1, "rounding": 0}
# Findings that make a gap fp32 storage removes a precision loss, not storage rounding (the defect the
# same review blocks on: a bf16 accumulator, NUM101, NUM105).
_PRECISION_DEFECT_RULES = ("NUM101", "NUM105")


_PRECISION_DEFECT_CATEGORIES = ("low-precision-accumulation", "dtype-mismatch", "fp8-range")


def _precision_defect(findings: list[Finding]) -> bool:
    return any(f.rule in _PRECISION_DEFECT_RULES
               or (f.category in _PRECISION_DEFECT_CATEGORIES and f.severity.value in ("warning", "error"))
               for f in findings)


def _gap_verdicts(sr: SizeResult, gpu_precision: str | None, defect: bool = False) -> list[tuple[Agreement, GapVerdict]]:
    """Per output: the port's gap to the GPU output and what it is (tolerance.gap_verdict)."""
    out = []
    gaps = sr.agreement(TRAINIUM.name, GPU_MODEL.name)
    fp32 = sr.runs.get(TRAINIUM_FP32.name)
    vs_ref = sr.agreement(GPU_MODEL.name)
    for i, ag in enumerate(gaps):
        if ag is None or sr.gpu_model is None or i >= len(sr.gpu_model):
            continue
        gpu = np.asarray(sr.gpu_model[i], dtype=np.float64)
        finite = gpu[np.isfinite(gpu)]
        ag32 = None
        if fp32 is not None and fp32.status == "ok" and i < len(fp32.outputs) \
                and np.shape(fp32.outputs[i]) == gpu.shape:
            ag32 = compare(fp32.outputs[i], gpu, rtol=ag.rtol, atol=ag.atol)
        spread = (sr.gpu_spread[i] if sr.gpu_spread and i < len(sr.gpu_spread) else None) or {}
        out.append((ag, gap_verdict(
            ag, scale=float(np.abs(finite).max()) if finite.size else 0.0,
            reduction_length=sr.reduction_length, compute_dtype=gpu_precision or "float32", gap_fp32=ag32,
            gpu_vs_reference=vs_ref[i] if i < len(vs_ref) else None,
            spread_abs=float(spread.get("max_abs") or 0.0), spread_rel=float(spread.get("max_rel") or 0.0),
            precision_defect=defect)))
    return out


def source_text(source: str | None) -> str:
    """How a gpu-model output was obtained, as reports and NUM106 say it."""
    if source and source.startswith("reference@"):
        return f"modelled (reference at the CUDA kernel's accumulation precision, {source.split('@', 1)[1]})"
    return source or "of unknown origin"


def _order_gap(res, prior, nki_path, kernel_line) -> list[Finding]:
    """NUM106: the gap between the port and the GPU output (captured or modelled), and whether it is
    rounding. Only a rounding-sized gap gets "not a defect" and a tolerance; see tolerance.gap_verdict."""
    worst = None
    defect = _precision_defect(prior)
    for sr in res.user_sizes():
        if sr.passed(TRAINIUM.name) is not True:
            continue
        for ag, verdict in _gap_verdicts(sr, res.gpu_precision, defect):
            if ag.max_abs == 0:
                continue
            key = (_VERDICT_RANK[verdict.kind], ag.max_rel if ag.max_rel == ag.max_rel else 0.0)
            if worst is None or key > worst[0]:
                worst = (key, sr, ag, verdict)
    if worst is None:
        return []
    _, sr, ag, v = worst
    source = source_text(sr.gpu_model_source)
    spread = any((s or {}).get("max_abs") for s in sr.gpu_spread or [])
    anchor = _anchor(prior, ("accumulation-order", "low-precision-accumulation"), nki_path)
    gap = (f"The port and the CUDA output, {source}, differ by at most {ag.max_abs:.3g} abs / {ag.max_rel:.3g} rel "
           f"on size {sr.size}")
    if v.kind == "storage-rounding":
        message = (f"{gap}: the rounding of the port's low-precision storage ({v.reason}). Compare GPU and Trainium "
                   f"outputs with rtol >= {v.rtol:g}, atol >= {v.atol:g}"
                   + (" (this covers the GPU's own run-to-run spread)." if spread else "."))
        kw: dict[str, Any] = {}
    elif v.is_rounding:
        message = (f"{gap}: rounding and reduction order, not a defect. Compare GPU and Trainium "
                   f"outputs with rtol >= {v.rtol:g}, atol >= {v.atol:g}"
                   + (" (this covers the GPU's own run-to-run spread)." if spread else "."))
        kw = {}
    else:
        message = f"{gap}: not rounding -- {v.reason}."
        if v.kind == "precision-loss":
            message += " Keep the tolerance; a looser one would hide this loss."
        else:
            message += " Find which side is wrong before comparing them with any tolerance."
        kw = {"severity": "warning"}
    return [registry.get("NUM106").finding(
        message,
        evidence=_ev(ag, size=sr.size, gpu_model=sr.gpu_model_source, verdict=v.kind, rounding_bound=v.bound_abs,
                     needed_rtol=v.rtol, needed_atol=v.atol,
                     gpu_spread=sr.gpu_spread if spread else None),
        **kw, **_place(anchor, nki_path, kernel_line))]
