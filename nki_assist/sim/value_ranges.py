"""Argument ranges of transcendental instructions, per source line: the run-time side of NKI402/NKI404.

One min/max per instruction (plus a finite filter only when the argument holds NaN/Inf), merged into one
record per (line, function). Review's reconciliation reads them to back or clear the static claims
(max exp argument vs the 88.72 fp32 overflow, activation arguments outside the ScalarE valid range).
"""

from __future__ import annotations

import numpy as np

from ..contracts.runs import ValueRange
from ..hardware import ACTIVATION_VALID_RANGE

# functions whose argument range decides whether the result is finite or valid
RANGED = frozenset({"exp", "exp2", "power", "log", "log2", "reciprocal", "rsqrt", "sqrt", "sin", "cos", "tan",
                    "arctan"}) | frozenset(ACTIVATION_VALID_RANGE)


def record(ctx, line: int | None, depth: int, func: str, v, m, out_dtype: str, *, scalar_engine: bool) -> None:
    """Merge the argument `v` (fp32 array; `m` the instruction mask or None) into the (line, func) record.
    `scalar_engine`: the ScalarE activation (its valid ranges apply), not a Vector/GpSimd op."""
    v = np.asarray(v)
    if m is not None:
        try:
            v = v[np.broadcast_to(m, v.shape)]
        except ValueError:
            pass
    n = v.size
    if not n or v.dtype.kind != "f":
        return
    lo, hi = v.min(), v.max()
    bad = 0
    if not (np.isfinite(lo) and np.isfinite(hi)):  # NaN/Inf among the arguments: the finite ones only
        fin = np.isfinite(v)
        bad = int(n - np.count_nonzero(fin))
        v = v[fin]
        lo, hi = (v.min(), v.max()) if v.size else (None, None)
    below = above = 0
    vr = ACTIVATION_VALID_RANGE.get(func) if scalar_engine else None
    if vr is not None and v.size:
        a, b = vr
        if func == "reciprocal":  # magnitude range, both signs
            mag = np.abs(v)
            below, above = int(np.count_nonzero(mag < a)), int(np.count_nonzero(mag > b))
        elif lo < a or hi > b:
            below, above = int(np.count_nonzero(v < a)), int(np.count_nonzero(v > b))
    key = (line, func)
    r = ctx.ranges.get(key)
    if r is None:
        r = ctx.ranges[key] = ValueRange(line=line, func=func, out_dtype=out_dtype, loop_depth=depth)
    r.calls += 1
    r.elements += n
    r.nonfinite += bad
    r.below += below
    r.above += above
    if lo is not None:
        lo, hi = float(lo), float(hi)
        r.min = lo if r.min is None or lo < r.min else r.min
        r.max = hi if r.max is None or hi > r.max else r.max


def collect(ctx) -> list[ValueRange]:
    return sorted(ctx.ranges.values(), key=lambda r: (r.line or 0, r.func))
