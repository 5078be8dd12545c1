"""Performance: a Trainium cost model over the simulator trace, findings, profile ingestion.

    est = estimate(run, target)                 # bounds, time, MFU/HFU/MBU, roofline, bottleneck
    findings = perf_findings(est, run, target)  # PERF1xx, ranked by estimated gain
    prof = load_profile("summary.json")         # neuron-profile / Neuron Explorer summary JSON
    est = merge_profile(est, prof, kernel_name="my_kernel")
    findings += profile_findings(prof)          # PROF1xx
    perf = to_performance(est)                  # schema.Performance for the Review JSON
    pngs = render_plots(est)                    # {"roofline.png": ..., "engines.png": ...}
"""

from __future__ import annotations

from typing import Any

from ..schema import EngineTime, Performance
from .findings import perf_findings
from .model import PerfEstimate, estimate
from .profile import ProfileError, ProfileSummary, load_profile, merge_profile, profile_findings
from .retile import RetilePlan, plan_sbuf_retile, plan_text

__all__ = [
    "PerfEstimate", "ProfileError", "ProfileSummary", "estimate", "load_profile", "merge_profile",
    "perf_findings", "plan_sbuf_retile", "plan_text", "profile_findings", "render_plots", "RetilePlan",
    "to_performance",
]


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(float(x), nd)


def to_performance(est: PerfEstimate) -> Performance:
    """The Review JSON `performance` section. Measured values replace estimates where the profile has them
    (and names the same kernel); both stay visible in `comparison`."""
    m = est.measured if est.measured and not est.measured.get("kernel_mismatch") else None
    measured_busy = (m or {}).get("engines_busy_us", {})
    engines: dict[str, EngineTime] = {}
    for name in ("tensor", "vector", "scalar", "gpsimd", "dma"):
        est_us = (est.dma_busy_s if name == "dma" else est.busy_s.get(name, 0.0)) * 1e6
        data: dict[str, Any] = {"busy_us": round(measured_busy.get(name, est_us), 3),
                                "instructions": est.instructions.get(name, 0),
                                "estimated_busy_us": round(est_us, 3),
                                "overhead_us": round(est.overhead_s.get(name, 0.0) * 1e6, 3)}
        if name in measured_busy:
            data["measured_busy_us"] = round(measured_busy[name], 3)
        if name == "dma":
            data.update(bytes=est.dma_bytes, transfers=est.dma_transfers,
                        payload_us=round(est.dma_payload_s * 1e6, 3))
        engines[name] = EngineTime(**data)
    mfu = m.get("mfu_estimated_percent") if m and "mfu_estimated_percent" in m else est.mfu_percent
    hbm_read = int(m["hbm_read_bytes"]) if m and "hbm_read_bytes" in m else est.hbm.read_bytes
    hbm_write = int(m["hbm_write_bytes"]) if m and "hbm_write_bytes" in m else est.hbm.write_bytes
    extra: dict[str, Any] = {
        "label": "estimate" if not m else "estimate with measured values where the profile has them",
        "status": est.status,
        "bottleneck_engine": est.bottleneck_engine,
        "bounds": {"perfect_overlap_us": _r(est.lower_bound_s * 1e6), "no_overlap_us": _r(est.upper_bound_s * 1e6),
                   "estimate_us": _r(est.estimated_time_us), "prologue_us": _r(est.prologue_s * 1e6),
                   "epilogue_us": _r(est.epilogue_s * 1e6)},
        "estimated_mfu_percent": _r(est.mfu_percent, 2),
        "hfu_estimated_percent": _r(m.get("hfu_estimated_percent") if m and "hfu_estimated_percent" in m
                                    else est.hfu_percent, 2),
        "mbu_estimated_percent": _r(m.get("mbu_estimated_percent") if m and "mbu_estimated_percent" in m
                                    else est.mbu_percent, 2),
        "useful_flops": est.useful_flops, "tensor_flops": est.tensor_flops, "transpose_flops": est.transpose_flops,
        "hbm": {"read_bytes": est.hbm.read_bytes, "write_bytes": est.hbm.write_bytes,
                "unique_read_bytes": est.hbm.unique_read_bytes, "unique_write_bytes": est.hbm.unique_write_bytes,
                "reload_bytes": est.hbm.reload_bytes, "redundancy": _r(est.hbm.redundancy),
                "min_bytes": est.min_bytes, "min_bytes_source": est.min_bytes_source},
        "arithmetic_intensity": _r(est.arithmetic_intensity),
        "min_arithmetic_intensity": _r(est.min_arithmetic_intensity),
        "roofline": {k: (_r(v) if isinstance(v, float) else v) for k, v in est.roofline.items()},
        "assumptions": list(est.assumptions),
        "notes": list(est.notes),
        "findings": list(est.ranking),
    }
    if est.comparison:
        extra["comparison"] = est.comparison
    if m and m.get("time_us"):
        extra["measured_time_us"] = _r(m["time_us"])
    return Performance(
        estimated_time_us=_r(est.estimated_time_us) if est.estimated_time_s > 0 else None,
        bottleneck=est.bottleneck,
        mfu_estimated_percent=_r(mfu, 2),
        hbm_read_bytes=hbm_read,
        hbm_write_bytes=hbm_write,
        engines=engines,
        measured=est.measured,
        **extra,
    )


def render_plots(est: PerfEstimate) -> dict[str, bytes]:
    """{"roofline.png": ..., "engines.png": ...} (matplotlib; deferred: only md/html reports draw)."""
    from .plots import render_plots as _render  # deferred: matplotlib side, md/html reports only

    return _render(est)
