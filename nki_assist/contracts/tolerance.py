"""Agreement between an output and its expected values: abs/rel error, ULPs, tolerance, NaN/Inf.

Errors are measured in float64. `max_rel` only counts elements whose expected magnitude is above
`atol` (relative error near zero says nothing). ULPs are in the output's storage dtype: the
absolute error divided by the spacing of that dtype at max(|expected|, atol).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import ml_dtypes
import numpy as np


@dataclass(slots=True)
class Agreement:
    shape: tuple[int, ...]
    dtype: str  # the actual output's storage dtype
    elements: int
    max_abs: float
    max_rel: float
    max_ulp: float
    mean_abs: float
    mismatches: int  # elements outside atol + rtol*|expected| (NaN where expected is finite counts)
    mismatch_fraction: float
    nan_actual: int
    inf_actual: int
    nan_expected: int
    inf_expected: int
    worst_index: tuple[int, ...] | None  # where |actual - expected| is largest (or first non-finite)
    worst_actual: float | None
    worst_expected: float | None
    rtol: float
    atol: float

    @property
    def passed(self) -> bool:
        return self.mismatches == 0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["passed"] = self.passed
        d["shape"] = list(self.shape)
        d["worst_index"] = list(self.worst_index) if self.worst_index is not None else None
        for k, v in d.items():  # JSON has no inf/nan
            if isinstance(v, float) and not np.isfinite(v):
                d[k] = None if np.isnan(v) else ("inf" if v > 0 else "-inf")
        return d


def _mantissa_bits(dtype: np.dtype) -> tuple[int, float] | None:
    """(explicit mantissa bits, smallest normal) of a float storage dtype, None for ints."""
    try:
        fi = ml_dtypes.finfo(dtype) if dtype.kind == "V" else np.finfo(dtype)
    except (ValueError, TypeError):
        return None
    return int(fi.nmant), float(fi.smallest_normal)


def ulp_of(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Spacing of `dtype` at |values| (float64 array); 1 for integer dtypes."""
    dtype = np.dtype(dtype)
    info = _mantissa_bits(dtype)
    if info is None:
        return np.ones_like(values, dtype=np.float64)
    nmant, tiny = info
    mag = np.maximum(np.abs(values), tiny)
    exp = np.floor(np.log2(mag))
    return np.exp2(exp - nmant)


def compare(actual: np.ndarray, expected: np.ndarray, *, rtol: float, atol: float) -> Agreement:
    """Agreement of `actual` (kernel output, any storage dtype) with `expected` (same shape)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        raise ValueError(f"shape {list(actual.shape)} vs expected {list(expected.shape)}")
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    n = a.size
    with np.errstate(invalid="ignore", over="ignore"):
        return _compare(actual, a, e, n, rtol, atol)


def _compare(actual: np.ndarray, a: np.ndarray, e: np.ndarray, n: int, rtol: float, atol: float) -> Agreement:
    diff = np.abs(a - e)
    if n and np.isfinite(diff).all():  # no NaN/Inf on either side (the usual case): the same numbers, fewer passes
        return _compare_finite(actual, a, e, diff, n, rtol, atol)
    both_nan = np.isnan(a) & np.isnan(e)
    same_inf = np.isinf(a) & (a == e)
    finite = np.isfinite(diff)
    bad = ~(both_nan | same_inf) & ~(diff <= atol + rtol * np.abs(e))
    mismatches = int(np.count_nonzero(bad))

    dfin = np.where(finite, diff, 0.0)
    nonfinite_bad = bad & ~finite
    if n and np.any(nonfinite_bad):  # a NaN/Inf where a number was expected is the worst element
        flat = int(np.flatnonzero(nonfinite_bad.ravel())[0])
        max_abs = float("inf")
    else:
        flat = int(np.argmax(dfin)) if n else None
        max_abs = float(dfin.max()) if n else 0.0
    rel_mask = finite & (np.abs(e) > max(atol, np.finfo(np.float64).tiny))
    max_rel = float((dfin[rel_mask] / np.abs(e[rel_mask])).max()) if np.any(rel_mask) else 0.0
    # ULPs at max(|expected|, atol): near zero the spacing collapses and says nothing.
    ulp = dfin / ulp_of(np.maximum(np.abs(e), atol) if atol > 0 else e, actual.dtype)
    max_ulp = float(ulp[finite].max()) if np.any(finite) else 0.0
    worst = tuple(int(i) for i in np.unravel_index(flat, a.shape)) if flat is not None else None
    return Agreement(
        shape=tuple(actual.shape), dtype=np.dtype(actual.dtype).name, elements=int(n),
        max_abs=max_abs, max_rel=max_rel, max_ulp=max_ulp,
        mean_abs=float(dfin.mean()) if n else 0.0,
        mismatches=mismatches, mismatch_fraction=mismatches / n if n else 0.0,
        nan_actual=int(np.isnan(a).sum()), inf_actual=int(np.isinf(a).sum()),
        nan_expected=int(np.isnan(e).sum()), inf_expected=int(np.isinf(e).sum()),
        worst_index=worst,
        worst_actual=float(a.ravel()[flat]) if flat is not None else None,
        worst_expected=float(e.ravel()[flat]) if flat is not None else None,
        rtol=rtol, atol=atol,
    )


def _compare_finite(actual: np.ndarray, a: np.ndarray, e: np.ndarray, diff: np.ndarray, n: int, rtol: float,
                    atol: float) -> Agreement:
    """`_compare` where every difference is finite (so are a and e): no NaN/Inf masks to build."""
    ae = np.abs(e)
    mismatches = int(np.count_nonzero(~(diff <= atol + rtol * ae)))
    flat = int(np.argmax(diff))
    rel_mask = ae > max(atol, np.finfo(np.float64).tiny)
    max_rel = float((diff[rel_mask] / ae[rel_mask]).max()) if np.any(rel_mask) else 0.0
    return Agreement(
        shape=tuple(actual.shape), dtype=np.dtype(actual.dtype).name, elements=int(n),
        max_abs=float(diff.ravel()[flat]), max_rel=max_rel,
        max_ulp=float((diff / ulp_of(np.maximum(ae, atol) if atol > 0 else e, actual.dtype)).max()),
        mean_abs=float(diff.mean()),
        mismatches=mismatches, mismatch_fraction=mismatches / n,
        nan_actual=0, inf_actual=0, nan_expected=0, inf_expected=0,
        worst_index=tuple(int(i) for i in np.unravel_index(flat, a.shape)),
        worst_actual=float(a.ravel()[flat]), worst_expected=float(e.ravel()[flat]),
        rtol=rtol, atol=atol,
    )


# Tolerances for comparing two simulators on the same kernel (same storage dtypes, different engine
# math or accumulation order): a few units of the output dtype's precision.
CROSS_CHECK_TOL: dict[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-12), "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2),
    "float8_e4m3": (1.25e-1, 6e-2), "float8_e4m3fn": (1.25e-1, 6e-2), "float8_e5m2": (2.5e-1, 1.25e-1),
}


def cross_check_tolerance(dtype: Any) -> tuple[float, float]:
    name = np.dtype(dtype).name
    return CROSS_CHECK_TOL.get(name, (0.0, 0.0))  # ints and bools must match exactly


# --- Is a gap between the port and the GPU output rounding? (NUM106: the one place that decides) ---

ROUNDING_GROWTH = 4.0  # rounding bound: ROUNDING_GROWTH * u * |output| * (1 + sqrt(reduction length))
FP32_CLOSER = 4.0  # precision loss: fp32 storage brings the port at least this much closer to the GPU
_U32 = 2.0**-24
BF16_U = 2.0**-8


@dataclass(slots=True)
class GapVerdict:
    kind: str  # rounding | storage-rounding | precision-loss | beyond-rounding | non-finite
    bound_abs: float  # the largest gap rounding and reduction order explain here
    rtol: float | None  # the tolerance a fair GPU-vs-Trainium comparison needs (rounding only)
    atol: float | None
    reason: str  # one sentence with the numbers

    @property
    def is_rounding(self) -> bool:
        return self.kind in ("rounding", "storage-rounding")


def unit_roundoff(dtype: Any) -> float:
    """Half the spacing at 1.0 of a float dtype (2^-24 for fp32, 2^-8 for bf16, 2^-11 for tf32); 0 for ints."""
    if dtype == "tf32":
        return 2.0**-11
    info = _mantissa_bits(np.dtype(dtype))
    return 0.0 if info is None else 2.0 ** -(info[0] + 1)


def nice_tolerance(x: float) -> float:
    """Round a tolerance up to 1, 2 or 5 times a power of ten (0 for 0; never for NaN/Inf)."""
    if not math.isfinite(x) or x <= 0:
        return 0.0
    e = math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * 10.0**e >= x:
            return float(f"{m * 10.0**e:.3g}")
    return x


def gap_verdict(gap: Agreement, *, scale: float, reduction_length: int | None = None,
                compute_dtype: Any = "float32", gap_fp32: Agreement | None = None,
                gpu_vs_reference: Agreement | None = None, spread_abs: float = 0.0,
                spread_rel: float = 0.0, precision_defect: bool = False) -> GapVerdict:
    """Whether the port's gap to the GPU output (`gap`: port vs GPU) is rounding and reduction order.

    Rounding-sized: at most ROUNDING_GROWTH * u * scale * (1 + sqrt(K)) + 2 ULPs of the output dtype at
    `scale` (the largest |GPU output|) + the GPU's own run-to-run spread, u the unit roundoff of the
    coarser of the output dtype and `compute_dtype` (the CUDA kernel's accumulation dtype). Not
    rounding: a gap above that bound, a non-finite gap, or a gap that shrinks FP32_CLOSER times with fp32
    storage (`gap_fp32`: the fp32-storage run vs GPU) while exceeding the output's own rounding, and
    either exceeds what bf16 storage rounding explains (the same bound at u = 2^-8) or comes with a
    precision defect the review found (`precision_defect`: a bf16 accumulator, NUM101/NUM105) -- the
    port's storage dtypes lose precision. A gap fp32 storage removes that is within bf16 rounding and
    has no such defect is "storage-rounding" (bf16 matmul operands of a faithful port). The
    recommended tolerance (rounding kinds only) covers the gap and the spread."""
    try:
        out_dt = np.dtype(gap.dtype)
    except TypeError:
        out_dt = np.dtype(np.float32)
    scale = float(scale) if math.isfinite(scale) and scale > 0 else 0.0
    final = 2.0 * float(ulp_of(np.array([max(scale, 1e-30)]), out_dt)[0]) if out_dt.kind != "i" else 0.0
    u = max(unit_roundoff(out_dt), unit_roundoff(compute_dtype) or _U32, _U32)
    k = max(int(reduction_length or 1), 1)
    bound = spread_abs + final + ROUNDING_GROWTH * u * scale * (1.0 + math.sqrt(k))
    if not math.isfinite(gap.max_abs):
        return GapVerdict("non-finite", bound, None, None,
                          f"the outputs differ by a non-finite amount ({gap.nan_expected} NaN and {gap.inf_expected} "
                          f"Inf in the GPU output, {gap.nan_actual} NaN and {gap.inf_actual} Inf in the port's)")
    if gap_fp32 is not None and math.isfinite(gap_fp32.max_abs) and gap.max_abs > final + spread_abs \
            and gap_fp32.max_abs * FP32_CLOSER < gap.max_abs:
        storage = spread_abs + final + ROUNDING_GROWTH * BF16_U * scale * (1.0 + math.sqrt(k))
        shrink = f"with fp32 storage the gap shrinks from {gap.max_abs:.3g} to {gap_fp32.max_abs:.3g}"
        if precision_defect or gap.max_abs > storage:
            why = ("the review found a precision defect that explains it" if precision_defect else
                   f"more than the {storage:.3g} that bf16 storage rounding explains here")
            return GapVerdict("precision-loss", storage, None, None,
                              f"{shrink}, {why}: the port's storage dtypes lose that precision, it is not reduction order")
        return GapVerdict("storage-rounding", storage, nice_tolerance(1.5 * max(gap.max_rel, spread_rel)),
                          nice_tolerance(1.5 * max(gap.max_abs, spread_abs)),
                          f"{shrink}, within the {storage:.3g} that rounding of bf16 storage explains here, and no "
                          "precision defect was found")
    if gap.max_abs > bound:
        why = (f" The GPU output itself is {gpu_vs_reference.max_abs:.3g} from the reference "
               f"({gpu_vs_reference.mismatch_fraction:.1%} of elements outside the tolerance)."
               if gpu_vs_reference is not None and not gpu_vs_reference.passed else "")
        return GapVerdict("beyond-rounding", bound, None, None,
                          f"the gap {gap.max_abs:.3g} is {gap.max_abs / bound:.3g}x what rounding and reduction "
                          f"order explain here (at most {bound:.3g} for outputs up to {scale:.3g}"
                          + (f", K = {k}" if k > 1 else "") + ")." + why)
    rtol = nice_tolerance(1.5 * max(gap.max_rel, spread_rel))
    atol = nice_tolerance(1.5 * max(gap.max_abs, spread_abs))
    return GapVerdict("rounding", bound, rtol, atol,
                      f"within the {bound:.3g} that rounding and reduction order explain here")

