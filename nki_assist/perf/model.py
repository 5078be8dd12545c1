"""Kernel-level estimate from per-instruction costs: bounds, time, utilization, roofline, bottleneck."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..contracts.runs import RunResult
from ..api.hardware import Target
from .cost import COMPUTE_ENGINES, InstrCost, access_setup_cycles, cost_of, descriptor_overhead_bytes
from .hbm import HbmTraffic, account

# Share of the estimate that must be exposed latency (not overlapped work) to call it serialization.
SERIALIZATION_SHARE = 0.33
# Share of the critical resource's time that must be fixed cost to call it overhead-bound.
OVERHEAD_SHARE = 0.5


def _spread(by_width: list[float]) -> list[float]:
    """Per-engine busy time when a transfer of width w occupies engines 0..w-1."""
    queues = [0.0] * (len(by_width) - 1)
    acc = 0.0
    for w in range(len(by_width) - 1, 0, -1):
        acc += by_width[w]
        queues[w - 1] = acc
    return queues


@dataclass
class Timing:
    """The time composition of a list of instruction costs."""

    busy: dict[str, float]  # compute engine -> busy seconds
    dma_queue_s: float  # busiest DMA engine
    dma_queues: list[float]
    hbm_s: float  # HBM bytes / HBM bandwidth
    prologue_s: float  # loads before the first consumer, plus one DMA latency
    epilogue_s: float  # stores after the last compute, plus one DMA latency
    lower_s: float  # perfect overlap: max over engines and DMA
    upper_s: float  # no overlap: everything in sequence, every DMA paying its fixed latency
    estimate_s: float

    @property
    def dma_s(self) -> float:
        return max(self.dma_queue_s, self.hbm_s)


def timing(costs: list[InstrCost], target: Target) -> Timing:
    busy = {e: 0.0 for e in COMPUTE_ENGINES}
    n_q = target.dma_engines
    by_width = [0.0] * (n_q + 1)  # DMA seconds by number of engines used (engines 0..w-1)
    serial_dma = 0.0
    hbm_bytes = 0
    n_dma = 0
    first_consumer = last_compute = None
    for i, c in enumerate(costs):
        if c.engine == "dma":
            n_dma += 1
            # spread over the engines its partitions map to (start partition unknown: assume 0)
            by_width[min(max(c.dma_engines, 1), n_q)] += c.seconds
            serial_dma += c.seconds
            hbm_bytes += c.hbm_read + c.hbm_write
        elif c.engine in busy:
            busy[c.engine] += c.seconds
            if c.seconds > 0:
                last_compute = i
                if first_consumer is None and c.op not in ("memset", "iota"):
                    first_consumer = i
    queues = _spread(by_width)
    fixed = target.dma_fixed_cost_s

    def dma_span(sub: list[InstrCost]) -> float:
        widths = [0.0] * (n_q + 1)
        for c in sub:
            widths[min(max(c.dma_engines, 1), n_q)] += c.seconds
        return (max(_spread(widths)) + fixed) if sub else 0.0

    pro = epi = 0.0
    if first_consumer is not None:
        pro = dma_span([c for c in costs[:first_consumer] if c.engine == "dma" and c.hbm_read])
    if last_compute is not None:
        epi = dma_span([c for c in costs[last_compute + 1:] if c.engine == "dma"])
    hbm_s = hbm_bytes / target.hbm_bw_bytes_per_s
    dma_side = max(max(queues), hbm_s)
    compute_max = max(busy.values())
    lower = max(compute_max, dma_side)
    upper = sum(busy.values()) + serial_dma + n_dma * fixed
    if compute_max > 0:
        est = max(compute_max + pro + epi, dma_side + (fixed if n_dma else 0.0))
    else:
        est = dma_side + (fixed if n_dma else 0.0)
    est = min(max(est, lower), max(upper, lower))
    return Timing(busy, max(queues), queues, hbm_s, pro, epi, lower, upper, est)


@dataclass
class PerfEstimate:
    target: str
    status: str
    estimated_time_s: float
    lower_bound_s: float
    upper_bound_s: float
    busy_s: dict[str, float]
    instructions: dict[str, int]
    overhead_s: dict[str, float]  # fixed per-instruction (or per-descriptor) cost per engine
    dma_busy_s: float
    dma_payload_s: float
    dma_overhead_s: float
    dma_transfers: int
    dma_bytes: int
    hbm: HbmTraffic
    min_bytes: int
    min_bytes_source: str
    useful_flops: float
    tensor_flops: float
    transpose_flops: float
    mfu_percent: float | None
    hfu_percent: float | None
    mbu_percent: float | None
    arithmetic_intensity: float | None  # useful FLOPs per HBM byte actually moved
    min_arithmetic_intensity: float | None  # useful FLOPs per minimum HBM byte
    ridge: float
    roofline: dict[str, Any]
    bottleneck: str | None
    bottleneck_engine: str | None
    prologue_s: float
    epilogue_s: float
    assumptions: list[str]
    notes: list[str] = field(default_factory=list)
    measured: dict[str, Any] | None = None
    comparison: list[dict[str, Any]] = field(default_factory=list)
    ranking: list[dict[str, Any]] = field(default_factory=list)
    costs: list[InstrCost] = field(default_factory=list, repr=False)
    target_spec: Target | None = field(default=None, repr=False)

    @property
    def estimated_time_us(self) -> float:
        return self.estimated_time_s * 1e6

    @property
    def redundancy(self) -> float:
        return self.hbm.redundancy


def _pct(num: float, den: float) -> float | None:
    return 100.0 * num / den if den > 0 else None


def assumptions_for(target: Target) -> list[str]:
    return [
        f"Estimate, not a measurement: {target.name} ({target.neuron_core}) numbers from hardware.py.",
        "TensorE matmul = max(min(64, stationary free), moving free) cycles, x4 for fp32 operands "
        f"(LISA nc_matmul), at {target.tensor_clock_hz / 1e9:.2f} GHz.",
        "Vector/Scalar/GpSimd = max(MIN_II, N-based cost) cycles per the legacy ISA cost tables "
        f"(MIN_II {target.min_ii_cycles}); fewer partitions cost the same as 128.",
        f"{access_setup_cycles(target)} cycles of tensor-access setup per compute instruction"
        + (" (ARCH2, NeuronCore-v2)." if access_setup_cycles(target) else " (none documented for this generation)."),
        f"DMA: {target.dma_engines} engines x {target.dma_bw_per_engine_bytes_per_s / 1e9:.1f} GB/s; a transfer on P "
        "partitions uses ceil(P/8) engines; each descriptor costs as much as "
        f"{descriptor_overhead_bytes(target)} B of payload (2 KiB = 50% efficiency, per the DMA bandwidth guide).",
        f"DMA fixed latency {target.dma_fixed_cost_s * 1e6:.1f} us per transfer is hidden by queueing except "
        "before the first compute and after the last.",
        "Zero-initialising a PSUM accumulator is free (folded into the first matmul's psum_zero flag).",
        "Engines overlap perfectly apart from the exposed prologue/epilogue; dependencies and buffer reuse "
        "inside the loop body are not modelled.",
        f"HBM bandwidth {target.hbm_bw_bytes_per_s / 1e9:.0f} GB/s per core (device bandwidth / cores).",
    ]


def estimate(run: RunResult, target: Target, *, min_input_bytes: int | None = None,
             min_output_bytes: int | None = None, useful_flops: float | None = None) -> PerfEstimate:
    notes: list[str] = []
    if run.status != "ok":
        notes.append(f"kernel run ended with status {run.status!r}"
                     + (f" ({run.error})" if run.error else "")
                     + ": the estimate covers only the instructions executed before it stopped.")
    notes.extend(n for n in run.notes if "trace" in n.lower())
    trace = sorted(run.trace, key=lambda e: e.seq)
    costs: list[InstrCost] = []
    for e in trace:
        try:
            costs.append(cost_of(e, target))
        except Exception as exc:  # a malformed entry must not sink the estimate
            notes.append(f"trace entry {e.seq} ({e.op}) could not be costed: {exc}")
    if not costs:
        notes.append("no instructions were traced; nothing to estimate.")
    t = timing(costs, target)

    instructions = {e: 0 for e in (*COMPUTE_ENGINES, "dma")}
    overhead = {e: 0.0 for e in (*COMPUTE_ENGINES, "dma")}
    for c in costs:
        if c.engine in instructions:
            instructions[c.engine] += 1
            overhead[c.engine] += c.overhead_seconds
    dma = [c for c in costs if c.engine == "dma"]
    hbm = account(trace, {c.seq: c.hbm_read for c in dma}, {c.seq: c.hbm_write for c in dma})
    if dma and not hbm.boxed:
        notes.append("some DMA entries carry no HBM region: unique-byte (redundancy) figures count them as unique.")

    if min_input_bytes is not None or min_output_bytes is not None:
        min_bytes = int((min_input_bytes or hbm.unique_read_bytes) + (min_output_bytes or hbm.unique_write_bytes))
        min_src = "given"
    else:
        min_bytes = hbm.unique_read_bytes + hbm.unique_write_bytes
        min_src = "unique HBM bytes touched by the trace"

    tensor_flops = sum(c.flops for c in costs)
    traced_useful = sum(c.useful_flops for c in costs)
    useful = float(useful_flops) if useful_flops is not None else traced_useful
    transpose_flops = sum(c.flops for c in costs if c.is_transpose)
    est_s = t.estimate_s
    peak = target.peak_bf16_flops  # profiler: tensor_engine_max_ops_per_sec = 2 x 16384 PEs x clock
    hbm_total = hbm.read_bytes + hbm.write_bytes
    mfu = _pct(useful, peak * est_s) if est_s > 0 else None
    hfu = _pct(tensor_flops, peak * est_s) if est_s > 0 else None
    mbu = _pct(hbm_total, target.hbm_bw_bytes_per_s * est_s) if est_s > 0 else None
    ai = useful / hbm_total if hbm_total else None
    ai_min = useful / min_bytes if min_bytes else None
    ridge = target.ridge_flops_per_byte
    roof: dict[str, Any] = {"peak_flops": peak, "hbm_bw_bytes_per_s": target.hbm_bw_bytes_per_s,
                            "ridge_flops_per_byte": ridge}
    if ai is not None:
        attainable = min(peak, ai * target.hbm_bw_bytes_per_s)
        achieved = useful / est_s if est_s > 0 else 0.0
        roof.update(arithmetic_intensity=ai, attainable_flops=attainable, achieved_flops=achieved,
                    region="compute" if ai >= ridge else "memory",
                    percent_of_roof=_pct(achieved, attainable))
    if useful <= 0:
        notes.append("no useful matmul FLOPs: MFU and arithmetic intensity are not meaningful for this kernel.")
    min_time = roofline_floor(min_bytes, useful, target)
    roof.update(min_time_s=min_time, max_speedup=(est_s / min_time) if min_time > 0 and est_s > 0 else None)

    bottleneck, engine = classify(t, overhead, costs)
    est = PerfEstimate(
        target=target.name, status=run.status, estimated_time_s=est_s,
        lower_bound_s=t.lower_s, upper_bound_s=t.upper_s, busy_s=dict(t.busy), instructions=instructions,
        overhead_s=overhead, dma_busy_s=t.dma_s, dma_payload_s=sum(c.payload_seconds for c in dma),
        dma_overhead_s=sum(c.seconds - c.payload_seconds for c in dma), dma_transfers=sum(c.transfers for c in dma),
        dma_bytes=sum(c.bytes for c in dma), hbm=hbm, min_bytes=min_bytes, min_bytes_source=min_src,
        useful_flops=useful, tensor_flops=tensor_flops, transpose_flops=transpose_flops,
        mfu_percent=mfu if useful > 0 else (0.0 if mfu is not None else None),
        hfu_percent=hfu, mbu_percent=mbu, arithmetic_intensity=ai, min_arithmetic_intensity=ai_min,
        ridge=ridge, roofline=roof, bottleneck=bottleneck, bottleneck_engine=engine,
        prologue_s=t.prologue_s, epilogue_s=t.epilogue_s, assumptions=assumptions_for(target),
        notes=notes, costs=costs, target_spec=target,
    )
    return est


def roofline_floor(min_bytes: int, useful_flops: float, target: Target) -> float:
    """The least time the kernel could take: its unique HBM bytes over the slower of HBM and all DMA engines
    at full speed, or its useful FLOPs at TensorE peak, whichever is larger. No change to the kernel that
    keeps its inputs and outputs can beat it, so no estimated speedup may exceed estimate / floor."""
    bw = min(target.hbm_bw_bytes_per_s, target.dma_engines * target.dma_bw_per_engine_bytes_per_s)
    return max(min_bytes / bw if min_bytes > 0 else 0.0,
               useful_flops / target.peak_bf16_flops if useful_flops > 0 else 0.0)


def classify(t: Timing, overhead: dict[str, float], costs: list[InstrCost]) -> tuple[str | None, str | None]:
    if t.estimate_s <= 0:
        return None, None
    if (t.estimate_s - t.lower_s) / t.estimate_s > SERIALIZATION_SHARE:
        return "serialization", None
    engine, busy = max(t.busy.items(), key=lambda kv: kv[1])
    if t.dma_s >= busy:
        dma = [c for c in costs if c.engine == "dma"]
        payload = sum(c.payload_seconds for c in dma)
        total = sum(c.seconds for c in dma)
        if t.hbm_s < t.dma_queue_s and total > 0 and (total - payload) / total > OVERHEAD_SHARE:
            return "dma-overhead-bound", "dma"
        return "memory-bound", "dma"
    if busy > 0 and overhead.get(engine, 0.0) / busy > OVERHEAD_SHARE:
        return "instruction-overhead-bound", engine
    return "compute-bound", engine


def scaled(c: InstrCost, factor: float, *, bytes_factor: float | None = None) -> InstrCost:
    bf = factor if bytes_factor is None else bytes_factor
    return replace(c, seconds=c.seconds * factor, work_seconds=c.work_seconds * factor,
                   payload_seconds=c.payload_seconds * factor,
                   hbm_read=int(c.hbm_read * bf), hbm_write=int(c.hbm_write * bf))
