"""Agreement between an output and its expected values: abs/rel error, ULPs, tolerance, NaN/Inf.

Errors are measured in float64. `max_rel` only counts elements whose expected magnitude is above
`atol` (relative error near zero says nothing). ULPs are in the output's storage dtype: the
absolute error divided by the spacing of that dtype at max(|expected|, atol).
"""

from __future__ import annotations

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


# Tolerances for comparing two simulators on the same kernel (same storage dtypes, different engine
# math or accumulation order): a few units of the output dtype's precision.
CROSS_CHECK_TOL: dict[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-12), "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2),
    "float8_e4m3": (1.25e-1, 6e-2), "float8_e4m3fn": (1.25e-1, 6e-2), "float8_e5m2": (2.5e-1, 1.25e-1),
}


def cross_check_tolerance(dtype: Any) -> tuple[float, float]:
    name = np.dtype(dtype).name
    return CROSS_CHECK_TOL.get(name, (0.0, 0.0))  # ints and bools must match exactly
