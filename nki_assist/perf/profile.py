"""neuron-profile / Neuron Explorer summary JSON: load, merge with the estimate, profile-only findings.

Metric names are those of the profile schema reference (nki-facts.md §4.4). Accepted layouts:
a flat object of metrics; `{"summary": {...}}` or `{"summary": [{...}, ...]}`; or an object whose single
value is the metrics object, keyed by kernel/NEFF name. `total_time` is in seconds, like neuron-profile
(`total_time_us` / `total_time_ms` are accepted too). Missing metrics are fine; unknown keys are kept.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..findings import Finding
from ..rules.specs.perf import RULES as _RULES
from .model import PerfEstimate

KNOWN_METRICS = (
    "total_time", "mm_arithmetic_intensity", "hfu_estimated_percent", "mfu_estimated_percent",
    "mfu_inst_estimated_percent", "mfu_max_achievable_estimated_percent", "mbu_estimated_percent",
    "mbu_min_read_util_percent", "average_dma_size", "useful_read_percent", "hbm_read_bytes",
    "hbm_write_bytes", "hbm_reload_bytes", "spill_save_bytes", "spill_reload_bytes", "sb_read_bytes",
    "sb_write_bytes", "tensor_engine_active_time", "vector_engine_active_time", "scalar_engine_active_time",
    "gpsimd_engine_active_time", "sync_engine_active_time", "tensor_engine_active_time_percent",
    "vector_engine_active_time_percent", "scalar_engine_active_time_percent", "gpsimd_engine_active_time_percent",
    "sync_engine_active_time_percent", "dma_active_time", "dma_active_time_percent", "dynamic_dma_packet_percent",
    "tensor_engine_instruction_count", "matmul_instruction_count", "model_flops", "transpose_flops",
    "active_flops", "throttled_flops", "nki_coverage_percent",
)
_NAME_KEYS = ("kernel_name", "kernel", "name", "neff_name", "neff")
_COVERAGE_KEYS = ("nki_coverage_percent", "nki_instruction_percent", "nki_time_percent")
SPILL_SHARE = 0.30  # perf guide: spill traffic over 30% of SBUF traffic is a red flag
TRANSPOSE_SHARE = 0.10  # Neuron Explorer insight threshold
THROTTLE_SHARE = 0.05
COVERAGE_MIN = 50.0  # Neuron Explorer insight: NKI coverage < 50%

_SPECS = {r.id: r for r in _RULES}  # own family only: a broken registry elsewhere must not hide these


class ProfileError(ValueError):
    """A profile summary that cannot be used at all (missing, not JSON, no known metric)."""


@dataclass
class ProfileSummary:
    path: str
    metrics: dict[str, float]
    kernel_name: str | None = None
    insights: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # unknown keys, kept verbatim
    notes: list[str] = field(default_factory=list)

    def get(self, key: str) -> float | None:
        return self.metrics.get(key)

    @property
    def total_time_s(self) -> float | None:
        t = self.metrics.get("total_time")
        return t if t is not None and t > 0 else None


def _pick_metrics(data: Any, path: str) -> tuple[dict[str, Any], str | None]:
    if isinstance(data, dict) and "summary" in data:
        name = next((data[k] for k in _NAME_KEYS if isinstance(data.get(k), str)), None)
        inner = data["summary"]
        if isinstance(inner, list):
            inner = [x for x in inner if isinstance(x, dict)]
            if not inner:
                raise ProfileError(f"{path}: 'summary' holds no metric objects")
            inner = inner[0]
        if not isinstance(inner, dict):
            raise ProfileError(f"{path}: 'summary' must be an object or a list of objects")
        return inner, name or next((inner[k] for k in _NAME_KEYS if isinstance(inner.get(k), str)), None)
    if isinstance(data, list):
        objs = [x for x in data if isinstance(x, dict)]
        if not objs:
            raise ProfileError(f"{path}: expected a JSON object of profile metrics, got a list without objects")
        data = objs[0]
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: expected a JSON object of profile metrics, got {type(data).__name__}")
    if not any(k in data for k in KNOWN_METRICS):
        nested = [(k, v) for k, v in data.items() if isinstance(v, dict)]
        if len(nested) == 1:
            key, inner = nested[0]
            return inner, next((inner[k] for k in _NAME_KEYS if isinstance(inner.get(k), str)), key)
    return data, next((data[k] for k in _NAME_KEYS if isinstance(data.get(k), str)), None)


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, str):
        try:
            f = float(v.strip().rstrip("%"))
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


def load_profile(path: str) -> ProfileSummary:
    p = Path(path)
    if not p.is_file():
        raise ProfileError(f"{path}: profile summary not found")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not a text file (expected neuron-profile summary JSON)") from None
    except json.JSONDecodeError as exc:
        raise ProfileError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    raw, name = _pick_metrics(data, path)
    metrics: dict[str, float] = {}
    extra: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in raw.items():
        if key in _NAME_KEYS:
            continue
        if key in ("total_time_us", "total_time_ms"):
            n = _number(value)
            if n is not None:
                metrics["total_time"] = n * (1e-6 if key.endswith("_us") else 1e-3)
            continue
        n = _number(value)
        if key in KNOWN_METRICS:
            if n is None:
                notes.append(f"metric {key!r} is not a number ({value!r}); ignored")
            elif n < 0:
                notes.append(f"metric {key!r} is negative ({n}); ignored")
            else:
                metrics[key] = n
        elif key != "insights":
            extra[key] = value
    insights_raw = raw.get("insights", data.get("insights") if isinstance(data, dict) else None)
    insights = [str(x if not isinstance(x, dict) else x.get("message", x)) for x in insights_raw or []] \
        if isinstance(insights_raw, list) else []
    if not metrics:
        raise ProfileError(f"{path}: no known profile metric found (expected names such as total_time, "
                           "mfu_estimated_percent, hbm_read_bytes)")
    missing = [k for k in ("total_time", "mfu_estimated_percent", "hbm_read_bytes") if k not in metrics]
    if missing:
        notes.append("profile lacks " + ", ".join(missing) + "; the estimate stands for those")
    return ProfileSummary(path=str(path), metrics=metrics, kernel_name=name, insights=insights,
                          extra=extra, notes=notes)


def _same_kernel(a: str, b: str) -> bool:
    x, y = a.lower().strip("_ "), b.lower().strip("_ ")
    return x == y or x in y or y in x


_ENGINES = ("tensor", "vector", "scalar", "gpsimd")


def measured_engine_busy(prof: ProfileSummary) -> dict[str, float]:
    out = {}
    total = prof.total_time_s
    for e in (*_ENGINES, "dma"):
        key = f"{e}_active_time" if e == "dma" else f"{e}_engine_active_time"
        if key in prof.metrics:
            out[e] = prof.metrics[key]
        elif f"{key}_percent" in prof.metrics and total:
            out[e] = prof.metrics[f"{key}_percent"] / 100.0 * total
    return out


def merge_profile(est: PerfEstimate, prof: ProfileSummary, *, kernel_name: str | None) -> PerfEstimate:
    """A copy of `est` with the measured metrics attached and an estimate-vs-measured comparison."""
    out = copy.copy(est)
    out.notes = list(est.notes) + [f"profile: {n}" for n in prof.notes]
    mismatch = bool(kernel_name and prof.kernel_name and not _same_kernel(kernel_name, prof.kernel_name))
    if mismatch:
        out.notes.append(f"profile {prof.path} is for kernel {prof.kernel_name!r}, not {kernel_name!r}: "
                         "measured values are shown beside the estimate but do not replace it")
    m = prof.metrics
    busy = measured_engine_busy(prof)
    measured: dict[str, Any] = {"source": prof.path, "kernel_name": prof.kernel_name, "kernel_mismatch": mismatch,
                                **dict(m)}
    if prof.total_time_s:
        measured["time_us"] = prof.total_time_s * 1e6
    measured["engines_busy_us"] = {e: v * 1e6 for e, v in busy.items()}
    out.measured = measured
    rows = [("time_us", est.estimated_time_us, measured.get("time_us")),
            ("mfu_percent", est.mfu_percent, m.get("mfu_estimated_percent")),
            ("hfu_percent", est.hfu_percent, m.get("hfu_estimated_percent")),
            ("mbu_percent", est.mbu_percent, m.get("mbu_estimated_percent")),
            ("hbm_read_bytes", est.hbm.read_bytes, m.get("hbm_read_bytes")),
            ("hbm_write_bytes", est.hbm.write_bytes, m.get("hbm_write_bytes")),
            ("hbm_reload_bytes", est.hbm.reload_bytes, m.get("hbm_reload_bytes")),
            ("arithmetic_intensity", est.arithmetic_intensity, m.get("mm_arithmetic_intensity"))]
    rows += [(f"{e}_busy_us", (est.busy_s.get(e) if e != "dma" else est.dma_busy_s) * 1e6,
              busy[e] * 1e6 if e in busy else None) for e in (*_ENGINES, "dma")]
    out.comparison = []
    for metric, e_val, m_val in rows:
        row: dict[str, Any] = {"metric": metric, "estimate": e_val, "measured": m_val}
        if e_val is not None and m_val is not None and m_val != 0:
            row["estimate_over_measured"] = e_val / m_val
        out.comparison.append(row)
    return out


def _finding(rule: str, message: str, file: str | None, evidence: dict, speedup: float | None) -> Finding:
    return _SPECS[rule].finding(message, file=file, evidence={"measured": True, **evidence},
                             est_speedup=round(speedup, 2) if speedup else None, confidence="high")


def profile_findings(prof: ProfileSummary, *, file: str | None = None) -> list[Finding]:
    m = prof.metrics
    out: list[Finding] = []
    insights = " ".join(prof.insights).lower()
    spill = m.get("spill_save_bytes", 0.0) + m.get("spill_reload_bytes", 0.0)
    sb = m.get("sb_read_bytes", 0.0) + m.get("sb_write_bytes", 0.0)
    if sb > 0 and spill / sb > SPILL_SHARE:
        out.append(_finding("PROF101", f"SBUF spill save/reload traffic is {100 * spill / sb:.0f}% of SBUF traffic "
                            f"({spill:,.0f} of {sb:,.0f} bytes); over 30% is a red flag (perf guide).", file,
                            {"focus_metric": "spill_share_percent", "value": round(100 * spill / sb, 1),
                             "spill_save_bytes": m.get("spill_save_bytes"),
                             "spill_reload_bytes": m.get("spill_reload_bytes"),
                             "confirm_with": {"metric": "spill_reload_bytes", "direction": "decrease"}}, None))
    tf = m.get("transpose_flops")
    hw = m.get("active_flops") or ((m.get("model_flops") or 0.0) + (tf or 0.0))
    if tf and hw and tf / hw > TRANSPOSE_SHARE:
        share = tf / hw
        active = m.get("tensor_engine_active_time_percent")
        sp = 1.0 / (1.0 - share * min(1.0, active / 100.0)) if active else None
        out.append(_finding("PROF102", f"Transposes are {100 * share:.0f}% of Tensor Engine FLOPs (insight threshold "
                            "10%).", file, {"focus_metric": "transpose_flops_percent", "value": round(100 * share, 1),
                                            "transpose_flops": tf, "hardware_flops": hw,
                                            "confirm_with": {"metric": "transpose_flops", "direction": "decrease"}},
                            sp))
    thr = m.get("throttled_flops")
    act = m.get("active_flops")
    if (thr and act and thr / act > THROTTLE_SHARE) or "throttl" in insights:
        share = thr / act if thr and act else None
        out.append(_finding("PROF103", "The Tensor Engine was throttled"
                            + (f" for {100 * share:.0f}% of its FLOPs" if share else "")
                            + "; it ramps to full rate only while kept >= 50% busy.", file,
                            {"focus_metric": "throttled_flops_percent",
                             "value": round(100 * share, 1) if share else None,
                             "confirm_with": {"metric": "throttled_flops", "direction": "decrease toward 0"}},
                            1.0 / (1.0 - share / 2) if share else None))
    cov = next((m[k] for k in _COVERAGE_KEYS if k in m), None)
    if cov is None:
        for k in _COVERAGE_KEYS:
            v = _number(prof.extra.get(k))
            if v is not None:
                cov = v
                break
    if (cov is not None and cov < COVERAGE_MIN) or ("coverage" in insights and cov is None):
        out.append(_finding("PROF104", "NKI kernels cover "
                            + (f"{cov:.0f}%" if cov is not None else "under half")
                            + " of the profiled device time; the rest is compiler-generated work.", file,
                            {"focus_metric": "nki_coverage_percent", "value": cov,
                             "confirm_with": {"metric": "nki_coverage_percent", "direction": "increase"}},
                            100.0 / cov if cov else None))
    return out
