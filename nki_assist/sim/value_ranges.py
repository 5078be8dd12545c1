"""Argument ranges of transcendental instructions, per source line: the run-time side of NKI402/NKI404.

One min/max per instruction (plus a finite filter only when the argument holds NaN/Inf), merged into one
record per (line, function). Review's reconciliation reads them to back or clear the static claims
(max exp argument vs the 88.72 fp32 overflow, activation arguments outside the ScalarE valid range).
"""

from __future__ import annotations

import numpy as np

from ..api.hardware import ACTIVATION_VALID_RANGE
from ..contracts.runs import ValueRange

# functions whose argument range decides whether the result is finite or valid
RANGED = frozenset({"exp", "exp2", "power", "log", "log2", "reciprocal", "rsqrt", "sqrt", "sin", "cos", "tan",
                    "arctan"}) | frozenset(ACTIVATION_VALID_RANGE)


_MIN, _MAX = np.minimum.reduce, np.maximum.reduce


def record(ctx, line: int | None, depth: int, func: str, v, m, out_dtype, *, scalar_engine: bool) -> None:
    """Merge the argument `v` (fp32 array; `m` the instruction mask or None) into the (line, func) record.
    `out_dtype()` names the result's dtype (called once per record). `scalar_engine`: the ScalarE activation
    (its valid ranges apply), not a Vector/GpSimd op. Runs once per instruction of a hot loop: two
    reductions, the rest only when they call for it; not in the sanitizer's second run (its ranges are the
    first run's)."""
    if ctx.sanitize:
        return
    if m is not None:
        try:
            v = v[np.broadcast_to(m, v.shape)]
        except (ValueError, IndexError, TypeError):
            pass
    n = v.size
    if not n or v.dtype.kind != "f":
        return
    lo, hi = float(_MIN(v, axis=None)), float(_MAX(v, axis=None))
    bad = 0
    if not (-_INF < lo and hi < _INF):  # NaN/Inf among the arguments: the finite ones only
        fin = np.isfinite(v)
        bad = int(n - np.count_nonzero(fin))
        v = v[fin]
        lo, hi = (float(_MIN(v, axis=None)), float(_MAX(v, axis=None))) if v.size else (None, None)
    key = (line, func)
    r = ctx.ranges.get(key)
    if r is None:
        r = ctx.ranges[key] = ValueRange(line=line, func=func, out_dtype=out_dtype(), loop_depth=depth)
    r.calls += 1
    r.elements += n
    if lo is None:
        r.nonfinite += bad
        return
    r.nonfinite += bad
    if r.min is None or lo < r.min:
        r.min = lo
    if r.max is None or hi > r.max:
        r.max = hi
    vr = _VALID.get(func) if scalar_engine else None
    if vr is not None:
        a, b = vr
        if func == "reciprocal":  # magnitude range, both signs
            mag = np.abs(v)
            r.below += int(np.count_nonzero(mag < a))
            r.above += int(np.count_nonzero(mag > b))
        elif lo < a or hi > b:
            r.below += int(np.count_nonzero(v < a))
            r.above += int(np.count_nonzero(v > b))


_INF = float("inf")
_VALID = ACTIVATION_VALID_RANGE


def collect(ctx) -> list[ValueRange]:
    return sorted(ctx.ranges.values(), key=lambda r: (r.line or 0, r.func))
