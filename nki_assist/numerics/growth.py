"""Error growth across sizes: fit log(error) against log(reduction length).

A sum of n terms accumulated in fp32 and rounded once to the output dtype has an absolute error that
grows like the result's magnitude, ~n^0.5 for zero-mean data; a running sum kept in bf16/fp16 adds a
rounding error of the size of the partial sum at every step, so its error grows ~n^1 (or worse, once
small terms stop changing the sum). The slope therefore tells the two apart without a threshold on
the error itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GrowthFit:
    scenario: str
    lengths: tuple[int, ...]
    errors: tuple[float, ...]  # mean absolute error vs the reference, per length
    slope: float
    r2: float

    def to_json(self) -> dict:
        return {"scenario": self.scenario, "lengths": list(self.lengths), "errors": list(self.errors),
                "slope": round(self.slope, 3), "r2": round(self.r2, 3)}


# fp32 accumulation of zero-mean terms grows ~0.5; above this a low-precision accumulator is likely.
LOW_PRECISION_SLOPE = 0.8


def fit(lengths: list[int], errors: list[float], scenario: str = "") -> GrowthFit | None:
    """Least-squares slope of log(error) vs log(length); None with fewer than 3 distinct usable points."""
    pts = sorted({(int(n), float(e)) for n, e in zip(lengths, errors) if n and n > 0 and np.isfinite(e) and e > 0})
    if len({n for n, _ in pts}) < 3:
        return None
    x = np.log([n for n, _ in pts])
    y = np.log([e for _, e in pts])
    slope, icpt = np.polyfit(x, y, 1)
    pred = slope * x + icpt
    ss_res = float(np.sum((y - pred) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2)) or 1e-300
    return GrowthFit(scenario, tuple(n for n, _ in pts), tuple(e for _, e in pts), float(slope), 1.0 - ss_res / ss_tot)
