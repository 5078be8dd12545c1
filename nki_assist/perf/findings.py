"""Cost-model findings (PERF1xx): bottleneck, focus metric, bounded est_speedup, source line.

Each speedup is `estimate / estimate-with-that-one-cost-removed`, recomputed through the same model,
so it can never promise more than removing that cost gives (the other engines and DMA still bound it).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Iterable

from ..contracts.runs import RunResult
from ..findings import Finding, Severity
from ..api.hardware import Target
from ..rules.runner import Check, CheckSet, crash_message
from ..rules.specs.perf import RULES as _RULES
from .cost import COMPUTE_ENGINES, InstrCost, access_setup_cycles, descriptor_overhead_bytes
from .model import PerfEstimate, scaled, timing

WARN_SPEEDUP = 1.25  # below this a finding is advice (info), above it a likely large loss (warning)
MIN_SPEEDUP = 1.05  # findings that would gain less are not reported

_SPECS = {r.id: r for r in _RULES}  # own family only: a broken registry elsewhere must not hide these


def _speedup(est: PerfEstimate, changed: dict[int, InstrCost], extra: Iterable[InstrCost] = ()) -> float:
    target = est.target_spec
    if target is None or est.estimated_time_s <= 0:
        return 1.0
    costs = [changed.get(c.seq, c) for c in est.costs] + list(extra)
    new = timing(costs, target).estimate_s
    if new <= 0:
        return 1.0
    return max(1.0, est.estimated_time_s / new)


def _top_line(costs: Iterable[InstrCost], weight=lambda c: c.seconds) -> tuple[int | None, list[int]]:
    by_line: dict[int | None, float] = defaultdict(float)
    for c in costs:
        by_line[c.line] += weight(c)
    ranked = [ln for ln, _ in sorted(by_line.items(), key=lambda kv: -kv[1]) if ln is not None]
    return (ranked[0] if ranked else None), ranked[1:4]


def _roofline_cap(est: PerfEstimate, speedup: float, message: str, evidence: dict) -> tuple[float, str]:
    """No estimate may promise more than the kernel's own roofline allows (estimate / floor time)."""
    cap = est.roofline.get("max_speedup")
    if cap is None or speedup <= cap:
        return speedup, message
    cap = max(1.0, cap)
    evidence.update(uncapped_speedup=round(speedup, 2), roofline_max_speedup=round(cap, 2),
                    roofline_floor_us=round(est.roofline.get("min_time_s", 0.0) * 1e6, 3), capped=True)
    for fmt in (".2f", ".1f"):
        if f"{speedup:{fmt}}x" in message:
            message = message.replace(f"{speedup:{fmt}}x", f"{cap:{fmt}}x", 1)
            break
    message += (f" (capped at the kernel's roofline bound: {est.min_bytes:,} unique HBM bytes at peak bandwidth"
                f" and its useful FLOPs at peak take {est.roofline.get('min_time_s', 0.0) * 1e6:.2f} us, so no change "
                f"can be more than {cap:.2f}x faster; the per-instruction model said {speedup:.2f}x)")
    return cap, message


def _make(rule: str, est: PerfEstimate, *, message: str, speedup: float, line: int | None, related: list[int],
          file: str | None, evidence: dict, confidence: str = "medium", advice: bool = False,
          fix: str | None = None) -> Finding:
    """`advice`: the cost sits in an idiom the hardware guides recommend (e.g. Tensor Engine operand tiles), so
    the finding is info unless the estimated gain is large (>= 2x)."""
    spec = _SPECS[rule]
    evidence = dict(evidence)
    speedup, message = _roofline_cap(est, speedup, message, evidence)
    sev = Severity.WARNING if speedup >= WARN_SPEEDUP and spec.severity != Severity.INFO else Severity.INFO
    if (spec.severity == Severity.INFO or advice) and speedup >= 2.0:
        sev = Severity.WARNING
    elif advice:
        sev = Severity.INFO
    evidence = {"estimate": True, "estimated_time_us": round(est.estimated_time_us, 3),
                "bottleneck": est.bottleneck, **evidence}
    rel = [{"file": file, "line": ln, "message": "also contributes"} for ln in related if file and ln]
    return spec.finding(message, severity=sev, file=file, line=line, fix=fix or spec.fix,
                        evidence=evidence, est_speedup=round(speedup, 2), confidence=confidence, related=rel)


def _redundant_dma(est: PerfEstimate, file: str | None, operand_loads: set[int] = frozenset()) -> Finding | None:
    hbm = est.hbm
    if hbm.unique_read_bytes <= 0 or hbm.redundancy < 1.5 or hbm.reload_bytes < 64 * 1024:
        return None
    changed: dict[int, InstrCost] = {}
    loads = [c for c in est.costs if c.engine == "dma" and c.hbm_read]
    for c in loads:
        read = hbm.read_by_line.get(c.line, 0)
        uniq = hbm.unique_read_by_line.get(c.line, read)
        if read > 0 and uniq < read:
            changed[c.seq] = scaled(c, uniq / read)
    if not changed:
        return None
    sp = _speedup(est, changed)
    if sp < MIN_SPEEDUP:
        return None
    line, related = _top_line([c for c in loads if c.seq in changed],
                              lambda c: hbm.read_by_line.get(c.line, 0) - hbm.unique_read_by_line.get(c.line, 0))
    by_line = {str(ln): {"loaded_bytes": hbm.read_by_line[ln], "unique_bytes": hbm.unique_read_by_line.get(ln, 0)}
               for ln in [line, *related] if ln in hbm.read_by_line}
    msg = (f"HBM loads move {hbm.read_bytes:,} bytes for {hbm.unique_read_bytes:,} unique bytes "
           f"({hbm.redundancy:.1f}x redundant); loading each tile once would save up to {sp:.2f}x (estimate).")
    saved = {c.seq: c.seconds - changed[c.seq].seconds for c in loads if c.seq in changed}
    operand_share = sum(v for q, v in saved.items() if q in operand_loads) / max(sum(saved.values()), 1e-30)
    if operand_share >= 0.5:
        msg += (" The reloads are mostly Tensor Engine operand tiles re-read for each output tile (the tiled-GEMM "
                "pattern): keeping them in SBUF across output tiles (hoisting, blocking) is an optimisation.")
    return _make("PERF101", est, message=msg, speedup=sp, line=line, related=related, file=file,
                 advice=operand_share >= 0.5, evidence={
        "matmul_operand_tiles_share_percent": round(100 * operand_share, 1),
        "focus_metric": "redundant_dma_ratio", "value": round(hbm.redundancy, 3),
        "hbm_read_bytes": hbm.read_bytes, "unique_read_bytes": hbm.unique_read_bytes,
        "reload_bytes": hbm.reload_bytes, "by_line": by_line,
        "confirm_with": {"metric": "hbm_reload_bytes", "direction": "decrease toward 0",
                         "also": "hbm_read_bytes should approach unique_read_bytes"},
    })


def matmul_operand_loads(run: RunResult, target: Target) -> set[int]:
    """Trace seqs of loads whose destination is a full-partition Tensor Engine operand tile (the tile shape the
    matmul tutorials load: [128, 128] stationary, [128, <=512] moving)."""
    keys = set()
    for e in run.trace:
        if e.engine == "tensor" and e.op == "nc_matmul" and not e.extra.get("is_transpose"):
            keys.update((o.shape, o.dtype, o.name) for o in e.srcs)
    return {e.seq for e in run.trace
            if e.engine == "dma" and e.direction == "load" and e.dst is not None
            and e.dst.partitions == target.partitions and (e.dst.shape, e.dst.dtype, e.dst.name) in keys}


def _small_dma(est: PerfEstimate, target: Target, file: str | None, operand_loads: set[int] = frozenset(),
               whole: set[int] = frozenset()) -> Finding | None:
    dma = [c for c in est.costs if c.engine == "dma" and c.transfers]
    # a DMA that already moves its whole HBM tensor cannot be made larger: small inputs are not a defect
    small = [c for c in dma if c.bytes / c.transfers < target.dma_min_bytes_per_partition and not c.dma_transpose
             and c.seq not in whole]
    total = sum(c.seconds for c in dma)
    small_t = sum(c.seconds for c in small)
    if not small or total <= 0 or small_t / total < 0.25:
        return None
    good = target.dma_good_bytes_per_partition
    d = descriptor_overhead_bytes(target)
    bw = target.dma_bw_per_engine_bytes_per_s
    changed = {}
    for c in small:
        transfers = max(1, math.ceil(c.bytes / good))
        secs = (c.bytes + transfers * d) / c.dma_engines / bw
        changed[c.seq] = replace(c, seconds=min(c.seconds, secs))
    sp = _speedup(est, changed)
    if sp < MIN_SPEEDUP:
        return None
    avg = sum(c.bytes for c in small) / max(1, sum(c.transfers for c in small))
    line, related = _top_line(small)
    operand_share = sum(c.seconds for c in small if c.seq in operand_loads) / small_t
    msg = (f"{len(small)} DMA transfers average {avg:,.0f} B per descriptor (minimum for efficiency "
           f"{target.dma_min_bytes_per_partition:,} B); they take {100 * small_t / total:.0f}% of DMA time. "
           f"Transfers of >= {good:,} B per partition would be up to {sp:.2f}x faster (estimate).")
    if operand_share >= 0.5:
        msg += (" Most of them load Tensor Engine operand tiles at the engine's tile shape: loading a wider strip "
                "per DMA (several tiles at once) is an optimisation, not a defect.")
    return _make("PERF102", est, message=msg, speedup=sp, line=line, related=related, file=file,
                 advice=operand_share >= 0.5, evidence={
        "focus_metric": "bytes_per_descriptor", "value": round(avg, 1),
        "threshold_bytes": target.dma_min_bytes_per_partition, "small_transfers": len(small),
        "dma_time_share_percent": round(100 * small_t / total, 1),
        "matmul_operand_tiles_share_percent": round(100 * operand_share, 1),
        "confirm_with": {"metric": "average_dma_size", "direction": "increase",
                         "also": "dma_active_time_percent should drop"},
    })


def _partition_underutilized(est: PerfEstimate, target: Target, file: str | None) -> Finding | None:
    comp = [c for c in est.costs if c.engine in ("vector", "scalar", "gpsimd") and c.seconds > 0]
    narrow = [c for c in comp if 0 < c.partitions < target.partitions]
    total = sum(c.seconds for c in comp)
    narrow_t = sum(c.seconds for c in narrow)
    if not narrow or total <= 0 or narrow_t / total < 0.2:
        return None
    mean_p = sum(c.partitions * c.seconds for c in narrow) / narrow_t
    if mean_p > 0.75 * target.partitions:
        return None
    changed = {c.seq: scaled(c, c.partitions / target.partitions) for c in narrow}
    # The same fix (rows on partitions) spreads narrow DMAs over all 16 DMA engines.
    narrow_dma = [c for c in est.costs if c.engine == "dma" and c.partitions < target.partitions
                  and c.dma_engines < target.dma_engines]
    for c in narrow_dma:
        changed[c.seq] = scaled(c, c.dma_engines / target.dma_engines, bytes_factor=1.0)
    sp = _speedup(est, changed)
    if sp < MIN_SPEEDUP:
        return None
    lane_ratio = target.partitions / mean_p
    util = 100 * sum(c.partitions * c.seconds for c in comp) / (target.partitions * total)
    line, related = _top_line(narrow)
    msg = (f"{100 * narrow_t / total:.0f}% of Vector/Scalar/GpSimd time is in instructions on "
           f"{mean_p:.0f} of {target.partitions} partitions on average (lane utilization {util:.0f}%); "
           f"fewer lanes cost the same, so packing rows onto partitions could be up to {sp:.1f}x faster "
           f"(lane ratio {lane_ratio:.0f}x; estimate).")
    return _make("PERF103", est, message=msg, speedup=sp, line=line, related=related, file=file, evidence={
        "focus_metric": "lane_utilization_percent", "value": round(util, 2),
        "mean_partitions": round(mean_p, 2), "lane_ratio": round(lane_ratio, 2),
        "time_share_percent": round(100 * narrow_t / total, 1), "instructions": len(narrow),
        "narrow_dma_transfers": len(narrow_dma),
        "confirm_with": {"metric": "vector_engine_active_time / scalar_engine_active_time",
                         "direction": "decrease after packing; instruction counts drop by the lane ratio"},
    })


def _full_tile_matmuls(mm: list[InstrCost], target: Target) -> dict[int, InstrCost]:
    """Each matmul at the cost of its FLOPs on full 128x128x512 tiles (plus the access setup)."""
    setup = access_setup_cycles(target) / target.tensor_clock_hz
    peak = target.peak_bf16_flops
    out = {}
    for c in mm:
        ideal = c.flops / (peak / (4 if c.fp32 else 1)) + setup
        out[c.seq] = replace(c, seconds=min(c.seconds, ideal), work_seconds=min(c.work_seconds, ideal))
    return out


def _operand_loads_of_k(run: RunResult, k: int) -> set[int]:
    """Loads whose destination is a matmul operand with `k` partitions: the DMAs a K tile of k rows forces."""
    keys = set()
    for e in run.trace:
        if e.engine == "tensor" and e.op == "nc_matmul" and not e.extra.get("is_transpose"):
            keys.update((o.shape, o.dtype, o.name) for o in e.srcs if o.partitions == k)
    return {e.seq for e in run.trace if e.engine == "dma" and e.direction == "load" and e.dst is not None
            and e.dst.partitions == k and (e.dst.shape, e.dst.dtype, e.dst.name) in keys}


def _narrow_contraction(est: PerfEstimate, target: Target, file: str | None, run: RunResult,
                        mm: list[InstrCost]) -> Finding | None:
    """The Tensor Engine is not busy, but its short K tile is the cause of the DMA time: each operand load
    moves only K partitions, so a 128-row K tile would make those loads 128/K times fewer and larger."""
    ks = sorted(c.k for c in mm)
    k = ks[len(ks) // 2]
    if not k or k >= target.contraction_max:
        return None
    loads = _operand_loads_of_k(run, k)
    dma = [c for c in est.costs if c.seq in loads and c.seconds > 0]
    load_t = sum(c.seconds for c in dma)
    if not dma or load_t < 0.25 * est.estimated_time_s:
        return None
    grow = k / target.contraction_max
    changed = {c.seq: replace(c, seconds=c.payload_seconds + (c.seconds - c.payload_seconds) * grow) for c in dma}
    changed.update(_full_tile_matmuls(mm, target))
    sp = _speedup(est, changed)
    if sp < MIN_SPEEDUP:
        return None
    narrow = [c for c in mm if c.k == k]  # not a bias broadcast or another matmul of another shape
    ns = sorted(c.n for c in narrow)
    n_med = ns[len(ns) // 2]
    line, related = _top_line(narrow)
    share = 100 * load_t / est.estimated_time_s
    msg = (f"{len(narrow)} matmuls contract {k} of {target.contraction_max} rows (moving free {n_med}); the operand "
           f"loads this K tile forces ({len(dma)} DMAs of {k} partitions) take {share:.0f}% of the kernel's time. "
           f"128-row K tiles would make them {1 / grow:.0f}x fewer and {1 / grow:.0f}x larger: up to {sp:.2f}x "
           "faster (estimate). The small DMAs are a symptom of the K tile.")
    full = target.contraction_max
    fix = (f"Make the K tile {full} rows: the operand loads become {1 / grow:.0f}x fewer and {1 / grow:.0f}x larger "
           f"and each matmul uses all {full} PE rows" + (
               f"; a moving tile of up to 512 columns (one fp32 PSUM bank) also cuts the matmul count"
               if n_med < 512 else "") + ".")
    return _make("PERF104", est, message=msg, speedup=sp, line=line, related=related, file=file, fix=fix, evidence={
        "focus_metric": "contraction_rows", "value": k, "median_k": k, "median_n": n_med, "matmuls": len(narrow),
        "operand_loads": len(dma), "operand_load_share_percent": round(share, 1),
        "operand_load_lines": sorted({c.line for c in dma if c.line}), "cause": "contraction",
        "confirm_with": {"metric": "dma_active_time_percent", "direction": "decrease",
                         "also": "average_dma_size grows by the K ratio; matmul count drops by the same factor"},
    })


def _tensor_underutilized(est: PerfEstimate, target: Target, file: str | None,
                          run: RunResult | None = None) -> Finding | None:
    mm = [c for c in est.costs if c.engine == "tensor" and not c.is_transpose and c.seconds > 0]
    busy = _busy_underuse(est, target, file, mm)
    if busy is None and mm and run is not None:
        return _narrow_contraction(est, target, file, run, mm)
    return busy


def _busy_underuse(est: PerfEstimate, target: Target, file: str | None, mm: list[InstrCost]) -> Finding | None:
    """The Tensor Engine carries a fifth of the time or more at under half its peak."""
    mm_t = sum(c.seconds for c in mm)
    if not mm or mm_t < 0.2 * est.estimated_time_s:
        return None
    peak = target.peak_bf16_flops
    eff = sum(c.flops for c in mm) / (mm_t * peak)
    if eff >= 0.5:
        return None
    sp = _speedup(est, _full_tile_matmuls(mm, target))
    if sp < MIN_SPEEDUP:
        return None
    ks = sorted(c.k for c in mm)
    ms = sorted(c.m for c in mm)
    ns = sorted(c.n for c in mm)
    med = lambda v: v[len(v) // 2]
    short = []
    if med(ks) < target.contraction_max:
        short.append(f"contraction {med(ks)} of {target.contraction_max} partitions")
    if med(ms) < target.stationary_fmax:
        short.append(f"stationary free {med(ms)} of {target.stationary_fmax}")
    if med(ns) < target.moving_fmax and med(ns) < 512:
        short.append(f"moving free {med(ns)} of {min(target.moving_fmax, 512)}")
    line, related = _top_line(mm)
    msg = (f"Matmuls reach {100 * eff:.0f}% of TensorE peak while busy ("
           + (", ".join(short) or "short tiles") + f"); full 128x128x512 tiles could be up to {sp:.2f}x faster "
           "(estimate).")
    return _make("PERF104", est, message=msg, speedup=sp, line=line, related=related, file=file, evidence={
        "focus_metric": "tensor_engine_efficiency_percent", "value": round(100 * eff, 2),
        "median_k": med(ks), "median_m": med(ms), "median_n": med(ns), "matmuls": len(mm),
        "confirm_with": {"metric": "mfu_estimated_percent", "direction": "increase",
                         "also": "tensor_engine_active_time_percent stays high while MFU is low before the fix"},
    })


def _fp32_matmul(est: PerfEstimate, file: str | None) -> Finding | None:
    mm = [c for c in est.costs if c.engine == "tensor" and c.fp32 and c.seconds > 0]
    if not mm:
        return None
    changed = {c.seq: replace(c, seconds=c.seconds / 4, work_seconds=c.work_seconds / 4) for c in mm}
    sp = _speedup(est, changed)
    if sp < MIN_SPEEDUP:
        return None
    share = 100 * sum(c.seconds for c in mm) / max(est.busy_s.get("tensor", 0.0), 1e-30)
    line, related = _top_line(mm)
    msg = (f"{len(mm)} matmuls take fp32 operands ({share:.0f}% of TensorE time) and run at 1/4 rate; "
           f"bf16 operands with fp32 PSUM accumulation could be up to {sp:.2f}x faster (estimate).")
    return _make("PERF105", est, message=msg, speedup=sp, line=line, related=related, file=file, evidence={
        "focus_metric": "fp32_matmul_time_share_percent", "value": round(share, 1), "matmuls": len(mm),
        "confirm_with": {"metric": "tensor_engine_active_time", "direction": "decrease ~4x for these matmuls"},
    })


def _instruction_overhead(est: PerfEstimate, target: Target, file: str | None) -> Finding | None:
    best = None
    for engine in COMPUTE_ENGINES:
        busy = est.busy_s.get(engine, 0.0)
        tiny = [c for c in est.costs if c.engine == engine and 0 < c.free < 128 and c.seconds > 0]
        t = sum(c.seconds for c in tiny)
        if not tiny or busy <= 0 or t / busy < 0.25:
            continue
        ov = sum(c.overhead_seconds for c in tiny)
        if ov / t < 0.5:
            continue
        changed = {c.seq: replace(c, seconds=c.work_seconds) for c in tiny}
        sp = _speedup(est, changed)
        if best is None or sp > best[0]:
            best = (sp, engine, tiny, t, ov, busy)
    if best is None or best[0] < MIN_SPEEDUP:
        return None
    sp, engine, tiny, t, ov, busy = best
    mean_free = sum(c.free for c in tiny) / len(tiny)
    line, related = _top_line(tiny)
    msg = (f"{len(tiny)} {engine} instructions have a free size under 128 (mean {mean_free:.0f}); fixed "
           f"per-instruction cost is {100 * ov / t:.0f}% of their time and they take {100 * t / busy:.0f}% of the "
           f"engine; batching them could be up to {sp:.2f}x faster (estimate).")
    return _make("PERF106", est, message=msg, speedup=sp, line=line, related=related, file=file, evidence={
        "focus_metric": "fixed_cost_share_percent", "value": round(100 * ov / t, 1), "engine": engine,
        "instructions": len(tiny), "mean_free_elems": round(mean_free, 1), "min_ii_cycles": target.min_ii_cycles,
        "confirm_with": {"metric": f"{engine}_engine_active_time",
                         "direction": "decrease; instruction count should fall as instructions grow"},
    })


def _transpose_overhead(est: PerfEstimate, file: str | None) -> Finding | None:
    tr = [c for c in est.costs if c.engine == "tensor" and c.is_transpose and c.seconds > 0]
    tensor = est.busy_s.get("tensor", 0.0)
    t = sum(c.seconds for c in tr)
    if not tr or tensor <= 0 or t / tensor < 0.1:
        return None
    changed = {c.seq: replace(c, seconds=0.0, work_seconds=0.0) for c in tr}
    sp = _speedup(est, changed)
    if sp < MIN_SPEEDUP:
        return None
    pct_flops = 100 * est.transpose_flops / est.tensor_flops if est.tensor_flops else 0.0
    line, related = _top_line(tr)
    msg = (f"{len(tr)} TensorE transposes/broadcasts take {100 * t / tensor:.0f}% of Tensor Engine time "
           f"({pct_flops:.0f}% of its FLOPs); avoiding them could be up to {sp:.2f}x faster (estimate).")
    return _make("PERF107", est, message=msg, speedup=sp, line=line, related=related, file=file, evidence={
        "focus_metric": "transpose_time_share_percent", "value": round(100 * t / tensor, 1),
        "transpose_flops_percent": round(pct_flops, 1),
        "confirm_with": {"metric": "transpose_flops", "direction": "decrease below 10% of TensorE FLOPs",
                         "also": "hfu_estimated_percent - mfu_estimated_percent gap shrinks"},
    })


_MOVABLE = {"tensor_copy", "copy", "tensor_scalar", "activation", "memset", "exp"}


def _engine_imbalance(est: PerfEstimate, file: str | None) -> Finding | None:
    if est.bottleneck not in ("compute-bound", "instruction-overhead-bound"):
        return None
    engine = est.bottleneck_engine
    if engine not in ("vector", "scalar", "gpsimd"):
        return None
    others = {e: est.busy_s.get(e, 0.0) for e in ("vector", "scalar", "gpsimd") if e != engine}
    other, other_t = min(others.items(), key=lambda kv: kv[1])
    busy = est.busy_s[engine]
    if busy < 2 * other_t:
        return None
    movable = [c for c in est.costs if c.engine == engine and c.op in _MOVABLE and c.seconds > 0]
    mov_t = sum(c.seconds for c in movable)
    if mov_t < 0.1 * busy:
        return None
    move = min(mov_t, (busy - other_t) / 2)
    keep = 1 - move / mov_t
    changed = {c.seq: scaled(c, keep) for c in movable}
    ghost = InstrCost(seq=-1, engine=other, op="moved", line=None, seconds=move, work_seconds=move)
    sp = _speedup(est, changed, [ghost])
    if sp < MIN_SPEEDUP:
        return None
    line, related = _top_line(movable)
    msg = (f"{engine} is busy {busy * 1e6:.1f} us while {other} is busy {other_t * 1e6:.1f} us; "
           f"moving copies/elementwise work ({mov_t * 1e6:.1f} us movable) could be up to {sp:.2f}x faster (estimate).")
    return _make("PERF108", est, message=msg, speedup=sp, line=line, related=related, file=file, evidence={
        "focus_metric": "busy_ratio", "value": round(busy / other_t, 2) if other_t else None,
        "engine": engine, "idle_engine": other, "movable_us": round(mov_t * 1e6, 3),
        "confirm_with": {"metric": f"{engine}_engine_active_time_percent",
                         "direction": f"decrease while {other}_engine_active_time_percent increases"},
    })


def _psum_evictions(est: PerfEstimate, run: RunResult, target: Target, file: str | None) -> Finding | None:
    """VectorE busier than TensorE because it copies PSUM out slice by slice (a [128, 64] eviction per
    matmul block): the engine timeline shows the imbalance; full-bank evictions and ScalarE share the work."""
    vec, ten = est.busy_s.get("vector", 0.0), est.busy_s.get("tensor", 0.0)
    if ten <= 0 or vec < 2 * ten or vec < 0.25 * est.estimated_time_s:
        return None
    ev_seqs = {e.seq for e in run.trace if e.engine == "vector" and e.srcs and e.srcs[0].buffer == "psum"
               and e.dst is not None and e.dst.buffer == "sbuf"}
    ev = [c for c in est.costs if c.seq in ev_seqs and c.seconds > 0]
    ev_t = sum(c.seconds for c in ev)
    if not ev or ev_t < 0.5 * vec:
        return None
    frees = sorted(c.free for c in ev)
    free = frees[len(frees) // 2]
    bank = target.psum_bank_bytes // 4  # fp32 elements in one bank per partition
    merge = min(1.0, free / bank) if free else 1.0
    changed = {c.seq: replace(c, seconds=c.work_seconds + (c.seconds - c.work_seconds) * merge) for c in ev}
    left = sum(x.seconds for x in changed.values())
    half = max(0.0, min(left / 2, (vec - ev_t + left - ten) / 2))  # hand part of what remains to ScalarE
    if half > 0:
        keep = 1 - half / left
        changed = {k: scaled(c, keep) for k, c in changed.items()}
    ghost = InstrCost(seq=-1, engine="scalar", op="moved", line=None, seconds=half, work_seconds=half)
    sp = _speedup(est, changed, [ghost] if half > 0 else [])
    if sp < MIN_SPEEDUP:
        return None
    line, related = _top_line(ev)
    change = (f"Evicting whole PSUM banks ({bank} fp32 columns) and moving part of the copies to ScalarE"
              if free < bank else "Moving part of the copies to ScalarE")
    msg = (f"vector is busy {vec * 1e6:.1f} us while tensor is busy {ten * 1e6:.1f} us ({vec / ten:.1f}x): "
           f"{len(ev)} PSUM evictions of {free} columns take {ev_t * 1e6:.1f} us of it. {change} "
           f"(nisa.activation with a copy, alternating with VectorE) could be up to {sp:.2f}x faster (estimate).")
    return _make("PERF108", est, message=msg, speedup=sp, line=line, related=related, file=file, evidence={
        "focus_metric": "busy_ratio", "value": round(vec / ten, 2), "engine": "vector", "idle_engine": "tensor",
        "evictions": len(ev), "eviction_free": free, "eviction_us": round(ev_t * 1e6, 3), "cause": "psum-eviction",
        "confirm_with": {"metric": "vector_engine_active_time_percent",
                         "direction": "decrease while tensor_engine_active_time_percent increases"},
    })


def _dma_transpose(est: PerfEstimate, target: Target, file: str | None) -> Finding | None:
    dma = [c for c in est.costs if c.engine == "dma"]
    tr = [c for c in dma if c.dma_transpose]
    total = sum(c.seconds for c in dma)
    t = sum(c.seconds for c in tr)
    if not tr or total <= 0 or t / total < 0.1:
        return None
    d = descriptor_overhead_bytes(target)
    bw = target.dma_bw_per_engine_bytes_per_s
    changed: dict[int, InstrCost] = {}
    added: list[InstrCost] = []
    per_block = (max(target.partitions, min(64, 128)) + access_setup_cycles(target)) / target.tensor_clock_hz
    for c in tr:
        plain = max(1, c.partitions)
        engines = min(target.dma_engines, max(1, math.ceil(plain / 8)))
        changed[c.seq] = replace(c, seconds=(c.bytes + plain * d) / engines / bw, transfers=plain,
                                 dma_engines=engines)
        blocks = max(1, math.ceil(c.partitions / 128)) * max(1, math.ceil(max(c.free, 1) / 128))
        added.append(InstrCost(seq=-2, engine="tensor", op="nc_transpose", line=c.line,
                               seconds=blocks * per_block, work_seconds=blocks * per_block))
    sp = _speedup(est, changed, added)
    if sp < MIN_SPEEDUP:
        return None
    line, related = _top_line(tr)
    msg = (f"{len(tr)} transposing DMAs take {100 * t / total:.0f}% of DMA time; a plain load plus TensorE "
           f"transposes could be up to {sp:.2f}x faster (estimate).")
    return _make("PERF109", est, message=msg, speedup=sp, line=line, related=related, file=file, evidence={
        "focus_metric": "dma_transpose_time_share_percent", "value": round(100 * t / total, 1),
        "confirm_with": {"metric": "dma_active_time_percent", "direction": "decrease"},
    })


@dataclass(frozen=True)
class _Inputs:
    """What every cost-model check reads."""

    est: PerfEstimate
    run: RunResult
    target: Target
    file: str | None
    operand_loads: set[int]


# The cost-model checks in registration order (the order ties are ranked in); run by perf_findings.
CHECKS = CheckSet("perf")


@CHECKS.register("PERF101")
def redundant_dma(i: _Inputs) -> Finding | None:
    return _redundant_dma(i.est, i.file, i.operand_loads)


@CHECKS.register("PERF102")
def small_dma(i: _Inputs) -> Finding | None:
    whole = {e.seq for e in i.run.trace if e.engine == "dma" and e.extra.get("whole_tensor")}
    return _small_dma(i.est, i.target, i.file, i.operand_loads, whole)


@CHECKS.register("PERF103")
def partition_underutilized(i: _Inputs) -> Finding | None:
    return _partition_underutilized(i.est, i.target, i.file)


@CHECKS.register("PERF104")
def tensor_underutilized(i: _Inputs) -> Finding | None:
    return _tensor_underutilized(i.est, i.target, i.file, i.run)


@CHECKS.register("PERF105")
def fp32_matmul(i: _Inputs) -> Finding | None:
    return _fp32_matmul(i.est, i.file)


@CHECKS.register("PERF106")
def instruction_overhead(i: _Inputs) -> Finding | None:
    return _instruction_overhead(i.est, i.target, i.file)


@CHECKS.register("PERF107")
def transpose_overhead(i: _Inputs) -> Finding | None:
    return _transpose_overhead(i.est, i.file)


@CHECKS.register("PERF108")
def engine_imbalance(i: _Inputs) -> Finding | None:
    return _engine_imbalance(i.est, i.file) or _psum_evictions(i.est, i.run, i.target, i.file)


@CHECKS.register("PERF109")
def dma_transpose(i: _Inputs) -> Finding | None:
    return _dma_transpose(i.est, i.target, i.file)


def perf_findings(est: PerfEstimate, run: RunResult, target: Target, *, file: str | None = None) -> list[Finding]:
    """Cost-model findings for one estimate, ranked by estimated gain (also stored in est.ranking)."""
    if file is None:
        file = next((e.file for e in run.trace if e.file), None)
    if est.target_spec is None:
        est.target_spec = target
    if est.estimated_time_s <= 0 or not est.costs:
        return []
    crashes: list[Finding] = []

    def crashed(check: Check, exc: Exception) -> None:
        est.notes.append(f"a performance check failed and was skipped: {exc!r}")
        crashes.append(_SPECS[check.rules[0]].finding(
            crash_message(check, exc), severity=Severity.INFO, file=file, confidence="low",
            evidence={"internal_error": f"{type(exc).__name__}: {exc}", "check": check.name}))

    found = CHECKS.run(_Inputs(est, run, target, file, matmul_operand_loads(run, target)), on_crash=crashed)
    # a roofline cap can leave nothing to gain
    out = [f for f in found if (f.est_speedup or 1.0) >= MIN_SPEEDUP]
    out.sort(key=lambda f: -(f.est_speedup or 1.0))
    est.ranking = [{"rule": f.rule, "name": f.name, "est_speedup": f.est_speedup, "line": f.line,
                    "focus_metric": f.evidence.get("focus_metric"), "value": f.evidence.get("value")}
                   for f in out]
    return out + crashes
