"""PNG charts for the performance section: roofline position and per-engine busy time.

A value that is not a finite number (a profile without an engine, a failed estimate) is shown as
"n/a", never drawn as 0 or silently dropped.
"""

from __future__ import annotations

import io
import math

from .model import PerfEstimate

from ..infra.extras import require


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return buf.getvalue()


def _finite(v) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def render_plots(est: PerfEstimate) -> dict[str, bytes]:
    """{"roofline.png": ..., "engines.png": ...}; the roofline is skipped when there are no FLOPs or bytes."""

    matplotlib = require("matplotlib", "the report's plots")
    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    out: dict[str, bytes] = {}
    roof = est.roofline
    peak = roof.get("peak_flops", 0.0)
    bw = roof.get("hbm_bw_bytes_per_s", 0.0)
    ai = roof.get("arithmetic_intensity")
    if _finite(peak) and _finite(bw) and _finite(ai) and peak > 0 and bw > 0 and ai > 0:
        fig = Figure(figsize=(6, 4))
        ax = fig.add_subplot(1, 1, 1)
        ridge = peak / bw
        lo, hi = min(ai, ridge) / 8, max(ai, ridge, est.min_arithmetic_intensity or 0) * 8
        xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        ax.loglog(xs, [min(peak, x * bw) / 1e12 for x in xs], color="black", label="roofline")
        ach = roof.get("achieved_flops", 0.0)
        if ach > 0:
            ax.scatter([ai], [ach / 1e12], color="tab:red", zorder=3, label=f"estimate ({est.mfu_percent or 0:.0f}% MFU)")
        if est.measured and est.measured.get("mfu_estimated_percent") is not None and ai:
            ax.scatter([ai], [peak * est.measured["mfu_estimated_percent"] / 100 / 1e12], marker="x",
                       color="tab:blue", zorder=3, label="measured")
        if est.min_arithmetic_intensity:
            ax.axvline(est.min_arithmetic_intensity, color="gray", linestyle=":", label="AI at minimum traffic")
        ax.axvline(ridge, color="gray", linestyle="--", linewidth=0.8)
        ax.set_xlabel("arithmetic intensity (FLOP / HBM byte)")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"Roofline ({est.target}, estimate)")
        ax.legend(fontsize=8)
        out["roofline.png"] = _png(fig)
    fig = Figure(figsize=(6, 3))
    ax = fig.add_subplot(1, 1, 1)
    names = ["tensor", "vector", "scalar", "gpsimd", "dma"]
    raw = [est.busy_s.get(n, 0.0) * 1e6 for n in names[:-1]] + [est.dma_busy_s * 1e6]
    vals = [v if _finite(v) else 0.0 for v in raw]
    ax.barh(names, vals, color="tab:gray", label="estimated busy")
    for name, v in zip(names, raw):
        if not _finite(v):
            ax.text(0, name, "  n/a (no estimate)", va="center", fontsize=8, color="tab:red")
    if est.measured and est.measured.get("engines_busy_us"):
        mb = est.measured["engines_busy_us"]
        shown = [(mb[n], n) for n in names if _finite(mb.get(n))]
        if shown:
            ax.scatter([v for v, _ in shown], [n for _, n in shown], color="tab:blue", marker="|", s=200,
                       label="measured")
        missing = [n for n in names if not _finite(mb.get(n))]
        if missing:
            ax.set_ylabel("not measured: " + ", ".join(missing), fontsize=7)
    if _finite(est.estimated_time_us):
        ax.axvline(est.estimated_time_us, color="tab:red", linestyle="--", label="estimated kernel time")
    ax.set_xlabel("microseconds")
    ax.set_title("Engine busy time (estimate)")
    ax.legend(fontsize=8)
    out["engines.png"] = _png(fig)
    return out
