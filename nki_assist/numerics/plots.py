"""Error vs size per scenario (PNG) for the HTML report, and the same points as data.

A size whose output has NaN/Inf, or elements outside tolerance, is a failure: it is drawn as a
failure (red X; NaN/Inf in a band above the finite errors, with the count), never folded into an
average, because the mean abs error only sees the finite elements (a tail of 24,064 NaN would
otherwise show as a *smaller* error). Scenarios that coincide are dodged sideways and keep their
own marker and line style, so each stays visible.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any

from .scenarios import matrix_rows
from ..infra.extras import require

SCENARIO_STYLE = {  # marker, line style
    "trainium": ("o", "-"), "trainium-fp32": ("s", "--"), "trainium-sr": ("^", "-."), "gpu-model": ("D", ":"),
}
DODGE = 0.07  # x offset between scenarios, in size slots


@dataclass
class ErrorPoint:
    size: str
    scenario: str
    mean_abs: float | None  # over the finite elements only
    outside: float  # share of elements outside tolerance (NaN/Inf where a number was expected count)
    nonfinite: int  # NaN + Inf elements in the output
    passed: bool
    note: str = ""  # why there is no number (the run failed, shapes differ)

    @property
    def failed(self) -> bool:
        return not self.passed


def _float(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def error_points(numerics: Any) -> list[ErrorPoint]:
    """One point per (size, scenario) compared with the reference, from the Review JSON `numerics`
    (a dict or the pydantic model). Several outputs: the worst of them."""
    data = numerics.model_dump() if hasattr(numerics, "model_dump") else dict(numerics or {})
    order = [s.get("name") for s in data.get("sizes") or [] if isinstance(s, dict)]
    acc: dict[tuple[str, str], ErrorPoint] = {}
    for row in data.get("matrix") or []:
        if not isinstance(row, dict) or row.get("against", "reference") != "reference":
            continue
        size, scenario = str(row.get("size")), str(row.get("scenario"))
        if scenario == "reference":
            continue
        mean = _float(row.get("mean_abs"))
        nonfinite = int(row.get("nan_actual") or 0) + int(row.get("inf_actual") or 0)
        outside = _float(row.get("mismatch_fraction"))
        passed = bool(row.get("passed"))
        p = acc.get((size, scenario))
        if p is None:
            acc[(size, scenario)] = ErrorPoint(size, scenario, mean, outside if outside is not None else
                                               (0.0 if passed else 1.0), nonfinite, passed, row.get("note") or "")
            continue
        p.mean_abs = max(filter(None, [p.mean_abs, mean]), default=None)
        p.outside = max(p.outside, outside if outside is not None else (0.0 if passed else 1.0))
        p.nonfinite += nonfinite
        p.passed = p.passed and passed
        p.note = p.note or row.get("note") or ""
    if not order:
        order = list(dict.fromkeys(s for s, _ in acc))
    rank = {s: i for i, s in enumerate(order)}
    return sorted(acc.values(), key=lambda p: (rank.get(p.size, len(rank)), _scenario_rank(p.scenario)))


def _scenario_rank(name: str) -> int:
    keys = list(SCENARIO_STYLE)
    return keys.index(name) if name in keys else len(keys)


def failure_caption(points: list[ErrorPoint]) -> str:
    """One sentence naming every failing point, for the figure's caption and alt text."""
    failing = [p for p in points if p.failed]
    if not failing:
        return "Every size passes in every scenario." if points else ""
    parts = []
    for p in failing:
        what = [f"{100 * p.outside:.3g}% of elements outside tolerance"] if p.outside else []
        if p.nonfinite:
            what.append(f"{p.nonfinite:,} NaN/Inf")
        if p.note:
            what.append(p.note)
        parts.append(f"{p.size} / {p.scenario} ({', '.join(what) or 'failed'})")
    return "FAILS: " + "; ".join(parts) + "."


def error_plot(res: Any) -> bytes | None:
    """The PNG for a NumericsResult (or the Review JSON `numerics`); None when nothing was compared."""
    numerics = res
    if hasattr(res, "sizes") and hasattr(res, "scenarios") and not hasattr(res, "matrix"):

        numerics = {"sizes": [{"name": s.size, "reduction_length": s.reduction_length} for s in res.sizes],
                    "matrix": matrix_rows(res), "reduction_symbol": res.reduction_symbol}
    points = error_points(numerics)
    if not points:
        return None
    return _draw(points, numerics)


@dataclass
class Layout:
    sizes: list[str]
    scenarios: list[str]
    xy: dict[tuple[str, str], tuple[float, float]]  # (size, scenario) -> where the marker goes
    band: float  # y of the NaN/Inf band, above every finite error
    bottom: float


def layout(points: list[ErrorPoint]) -> Layout:
    """Marker positions: sizes are slots, scenarios dodged inside a slot (coinciding values stay
    visible), finite errors on a log axis, outputs with NaN/Inf (or no number) in the band on top."""
    sizes = list(dict.fromkeys(p.size for p in points))
    scenarios = list(dict.fromkeys(p.scenario for p in points))
    finite = [p.mean_abs for p in points if p.mean_abs and p.nonfinite == 0]
    band = max(finite, default=1e-6) * 30
    bottom = min(finite, default=1e-7) / 10
    xy = {}
    for p in points:
        dx = (scenarios.index(p.scenario) - (len(scenarios) - 1) / 2) * DODGE
        y = band if p.nonfinite or p.mean_abs is None else max(p.mean_abs, bottom)
        xy[(p.size, p.scenario)] = (sizes.index(p.size) + dx, y)
    return Layout(sizes, scenarios, xy, band, bottom)


def _draw(points: list[ErrorPoint], numerics: Any) -> bytes:

    matplotlib = require("matplotlib", "the report's plots")
    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    data = numerics.model_dump() if hasattr(numerics, "model_dump") else dict(numerics)
    lay = layout(points)
    sizes, scenarios, top, bottom = lay.sizes, lay.scenarios, lay.band, lay.bottom
    symbol = data.get("reduction_symbol")
    lengths = {s.get("name"): s.get("reduction_length") for s in data.get("sizes") or [] if isinstance(s, dict)}
    labels = [s + (f"\n{symbol}={lengths[s]}" if symbol and lengths.get(s) else "") for s in sizes]

    fig = Figure(figsize=(7, 5.2), dpi=100)
    ax, bars = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    ax.axhspan(top / 3, top * 3, color="#cf222e", alpha=0.08)
    ax.text(-0.45, top, "NaN / Inf in output", color="#cf222e", fontsize=8, va="center")
    width = 0.8 / max(len(scenarios), 1)
    for k, name in enumerate(scenarios):
        marker, style = SCENARIO_STYLE.get(name, ("v", "-"))
        pts = {p.size: p for p in points if p.scenario == name}
        xs = [lay.xy[(s, name)][0] for s in sizes if s in pts]
        ys = [lay.xy[(s, name)][1] for s in sizes if s in pts]
        line, = ax.plot(xs, ys, marker=marker, linestyle=style, label=name, markersize=6, alpha=0.9)
        for x, s, y in zip(xs, [s for s in sizes if s in pts], ys):
            p = pts[s]
            if p.failed:
                ax.plot([x], [y], marker="X", color="#cf222e", markersize=12, zorder=4)
                if p.nonfinite:
                    ax.annotate(f"{p.nonfinite:,} NaN/Inf", (x, y), textcoords="offset points",
                                xytext=(6, 6 + 9 * k), fontsize=7, color="#cf222e")
        bx = [i + (k - (len(scenarios) - 1) / 2) * width for i, s in enumerate(sizes) if s in pts]
        heights = [100 * pts[s].outside for s in sizes if s in pts]
        bars.bar(bx, heights, width=width * 0.9, color=line.get_color(), label=name)
        for x, h in zip(bx, heights):
            bars.text(x, h, f"{h:.3g}%" if h else "pass", ha="center", va="bottom", fontsize=7,
                      color="#cf222e" if h else "#1a7f37")
    ax.set_yscale("log")
    ax.set_ylim(bottom, top * 5)
    ax.set_ylabel("mean abs error\n(finite elements)")
    ax.set_title("Numerical error per size and scenario (vs float64 reference)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    bars.set_ylabel("% elements\noutside tolerance")
    bars.set_ylim(0, max(5.0, max((100 * p.outside for p in points), default=0) * 1.3))
    bars.set_xticks(range(len(sizes)), labels)
    bars.set_xlim(-0.5, len(sizes) - 0.5)
    bars.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
