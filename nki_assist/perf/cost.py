"""Per-instruction cost: engine cycles from the documented formulas, DMA time per queue.

Formulas are the legacy nki.isa "Estimated instruction cost" tables and the architecture guides
(nki-facts.md §1.3, §1.4, §4.2); numbers come from `hardware.Target`. Each instruction is costed
alone; overlap between engines is the model's job (model.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..api import catalogue as nki_api
from ..contracts.runs import TraceEntry
from ..api.hardware import DTYPE_BYTES, Target

COMPUTE_ENGINES = ("tensor", "vector", "scalar", "gpsimd")
DMA_OPS_TRANSPOSE = ("dma_transpose", "load_transpose2d")

# ~60-cycle fixed overhead per tensor access request on NeuronCore-v2 (ARCH2, "SBUF/PSUM access").
# Not documented for v3/v4, so 0 there. Kept here until hardware.Target carries it.
_ACCESS_SETUP_CYCLES = {"NeuronCore-v2": 60}

# Ops whose VectorE cost is ~N (one input) rather than ~2N (LISA cost table); from the API catalogue.
_ONE_PASS_OPS = nki_api.one_pass_ops()


def access_setup_cycles(target: Target) -> int:
    return int(getattr(target, "access_setup_cycles", _ACCESS_SETUP_CYCLES.get(target.neuron_core, 0)))


def descriptor_overhead_bytes(target: Target) -> int:
    """Per-descriptor DMA overhead expressed as payload bytes.

    The DMA bandwidth guide says >= 2 KiB per partition is the minimum and >= 4 KiB saturates;
    modelling each descriptor as costing as much as `dma_min_bytes_per_partition` of payload gives
    50% of nominal engine bandwidth at 2 KiB and 67% at 4 KiB (~290 GB/s on 16 x 27.2 GB/s), close
    to the guide's sustained 272 GB/s per core.
    """
    return target.dma_min_bytes_per_partition


@dataclass(slots=True)
class InstrCost:
    """Cost of one trace entry."""

    seq: int
    engine: str
    op: str
    line: int | None
    seconds: float = 0.0  # busy time on its engine (DMA: time on each engine it uses)
    work_seconds: float = 0.0  # part proportional to the data (no fixed per-instruction cost)
    partitions: int = 0
    free: int = 0
    # TensorE
    flops: float = 0.0  # FLOPs the PE array executes (HFU numerator)
    useful_flops: float = 0.0  # matmul FLOPs that are not transposes/broadcasts (MFU numerator)
    pe_fill: float = 1.0  # k*m/(128*128) share of the array a matmul uses
    is_transpose: bool = False
    fp32: bool = False
    k: int = 0
    m: int = 0
    n: int = 0
    # DMA
    bytes: int = 0
    transfers: int = 0
    dma_engines: int = 0
    direction: str | None = None
    payload_seconds: float = 0.0
    hbm_read: int = 0
    hbm_write: int = 0
    dma_transpose: bool = False

    @property
    def overhead_seconds(self) -> float:
        return max(0.0, self.seconds - self.work_seconds)


def _dtype_of(entry: TraceEntry) -> str | None:
    if entry.dst is not None:
        return entry.dst.dtype
    return entry.srcs[0].dtype if entry.srcs else None


def _matmul_dims(entry: TraceEntry) -> tuple[int, int, int]:
    ex = entry.extra
    k = ex.get("k")
    m = ex.get("m")
    n = ex.get("n")
    if k is None or m is None or n is None:
        st = entry.srcs[0] if entry.srcs else None
        mv = entry.srcs[1] if len(entry.srcs) > 1 else None
        k = k or (st.shape[0] if st and st.shape else entry.partitions or 1)
        m = m or (math.prod(st.shape[1:]) if st and len(st.shape) > 1 else 1)
        if n is None:
            n = math.prod(mv.shape[1:]) if mv and len(mv.shape) > 1 else (entry.free_elems or k)
    return max(int(k), 1), max(int(m), 1), max(int(n), 1)


def _tensor_cost(entry: TraceEntry, target: Target, c: InstrCost) -> None:
    k, m, n = _matmul_dims(entry)
    transpose = bool(entry.extra.get("is_transpose")) or entry.op in ("nc_transpose", "transpose")
    fp32 = any(s.dtype == "float32" for s in entry.srcs)
    rate = 4 if fp32 else 1  # fp32 matmul runs at 1/4 rate (ARCH2; LISA nc_matmul)
    if entry.extra.get("perf_mode") == "double_row":
        rate = 0.5  # FP8 double_row: 2x throughput (ARCH3)
    # max(min(64, N_stationary), N_moving) PE cycles (LISA nc_matmul; ARCH2 MM_INIT_LATENCY=64)
    work = n * rate
    cycles = max(min(target.mm_init_latency_cycles, m), n) * rate + access_setup_cycles(target)
    c.seconds = cycles / target.tensor_clock_hz
    c.work_seconds = work / target.tensor_clock_hz
    c.k, c.m, c.n = k, m, n
    c.flops = 2.0 * k * m * n
    useful = not transpose and entry.extra.get("useful", True)
    c.useful_flops = c.flops if useful else 0.0
    c.is_transpose = transpose or not useful
    c.fp32 = fp32
    c.pe_fill = min(1.0, (min(k, target.contraction_max) * min(m, target.stationary_fmax))
                    / (target.contraction_max * target.stationary_fmax))
    c.partitions = k
    c.free = n


def _alu(entry: TraceEntry, default: str) -> str:
    ex = entry.extra
    return str(ex.get("alu_op", ex.get("alu", ex.get("op", default)))).lower()


def _vector_cycles(entry: TraceEntry, target: Target) -> tuple[float, float]:
    """(cycles, work cycles) for Vector/Scalar/GpSimd instructions (LISA cost table)."""
    n = max(int(entry.free_elems), 1)
    op = entry.op
    ii = target.min_ii_cycles
    dt = _dtype_of(entry) or "float32"
    bf16_in = bool(entry.srcs) and all(s.dtype in ("bfloat16", "float16") for s in entry.srcs)
    if op == "tensor_tensor":
        bufs = sorted(s.buffer for s in entry.srcs)
        alu = _alu(entry, "")
        one_pass = bufs == ["psum", "sbuf"] or (bf16_in and alu in ("add", "multiply", "mul", "subtract", "sub"))
        work = n if one_pass else 2 * n
    elif op == "tensor_reduce":
        alu = _alu(entry, "add")
        src = entry.srcs[0] if entry.srcs else None
        src_free = math.prod(src.shape[1:]) if src is not None and len(src.shape) > 1 else n
        src_n = max(int(entry.extra.get("in_free_elems", src_free)), n)
        work = src_n / 2 if bf16_in and alu in ("add", "max") else src_n
    elif op == "reciprocal":
        work = 8 * n
    elif op == "bn_aggr":
        work = 13 * n / 3
    elif op in ("tensor_tensor_scan",):
        work = 2 * n
    elif op == "scalar_tensor_tensor":
        work = n if bf16_in and n % 2 == 0 else 2 * n
    elif op == "memset" and entry.dst is not None and entry.dst.buffer == "psum" and not entry.extra.get("value"):
        # zeroing a PSUM accumulator folds into the first matmul's psum_zero flag (profiler acc_flags)
        return 0.0, 0.0
    elif op == "memset":
        work = n / 2 if dt in ("bfloat16", "float16") and entry.extra.get("value", 0) == 0 else n
        return max(work, 1.0) + access_setup_cycles(target), work
    elif op in ("iota", "affine_select"):
        work = n
        return target.gpsimd_startup_cycles + n + access_setup_cycles(target), work
    else:
        work = n
    cycles = max(ii, work)
    if op in ("activation_reduce", "tensor_scalar_reduce"):
        cycles += ii  # extra accumulator read (LISA)
    if entry.extra.get("dynamic"):
        cycles = max(cycles, 600)  # dynamic src/dst copies ~600 cycles min (LISA tensor_copy)
    # v3+ Vector performance mode for bf16/fp16 SBUF operands (ARCH3): 4x copies/tensor_scalar, else 2x
    if target.vector_bf16_fast_mode and entry.engine == "vector" and bf16_in and dt in ("bfloat16", "float16"):
        if all(s.buffer == "sbuf" for s in entry.srcs):
            speed = 4 if op in ("tensor_copy", "copy", "tensor_scalar") else 2
            cycles, work = max(ii, cycles / speed), work / speed
    return cycles + access_setup_cycles(target), work


def _dma_cost(entry: TraceEntry, target: Target, c: InstrCost) -> None:
    nbytes = max(int(entry.bytes), 0)
    p = max(int(entry.partitions), 1)
    transfers = int(entry.transfers) if entry.transfers else p
    transfers = max(transfers, 1)
    # Each DMA engine serves 8 of the 128 partitions (ARCH2; nki-dma-overview): a 1-partition transfer
    # runs on one engine, a 128-partition one on all 16.
    per_engine = max(1, target.partitions // target.dma_engines)
    engines = min(target.dma_engines, max(1, math.ceil(p / per_engine)), transfers)
    if entry.hbm_tensor is not None and entry.partitions <= 1 and transfers > 1:
        engines = min(target.dma_engines, transfers)  # HBM<->HBM copies spread by descriptor
    bw = target.dma_bw_per_engine_bytes_per_s
    d = descriptor_overhead_bytes(target)
    c.payload_seconds = nbytes / engines / bw
    c.seconds = (nbytes + transfers * d) / engines / bw
    c.work_seconds = c.payload_seconds
    c.bytes, c.transfers, c.dma_engines = nbytes, transfers, engines
    c.partitions = p
    c.free = int(entry.free_elems)
    c.direction = entry.direction
    c.dma_transpose = entry.op in DMA_OPS_TRANSPOSE or bool(entry.extra.get("transpose"))
    src_hbm = any(s.buffer in ("hbm", "shared_hbm", "private_hbm") for s in entry.srcs)
    dst_hbm = entry.dst is not None and entry.dst.buffer in ("hbm", "shared_hbm", "private_hbm")
    if entry.direction == "load" or (entry.direction is None and src_hbm and not dst_hbm):
        c.hbm_read = nbytes
    elif entry.direction == "store" or (entry.direction is None and dst_hbm and not src_hbm):
        c.hbm_write = nbytes
    elif src_hbm and dst_hbm:
        c.hbm_read = c.hbm_write = nbytes


def cost_of(entry: TraceEntry, target: Target) -> InstrCost:
    c = InstrCost(seq=entry.seq, engine=entry.engine, op=entry.op, line=entry.line,
                  partitions=int(entry.partitions), free=int(entry.free_elems))
    if entry.engine == "dma" or entry.op.startswith("dma") or entry.op in ("load", "store"):
        c.engine = "dma"
        _dma_cost(entry, target, c)
    elif entry.engine == "tensor":
        _tensor_cost(entry, target, c)
    elif entry.engine in ("vector", "scalar", "gpsimd"):
        clock = {"vector": target.vector_clock_hz, "scalar": target.scalar_clock_hz,
                 "gpsimd": target.gpsimd_clock_hz}[entry.engine]
        cycles, work = _vector_cycles(entry, target)
        c.seconds = cycles / clock
        c.work_seconds = work / clock
    # "sync" and unknown engines cost nothing in the model
    return c


def elem_bytes(dtype: str | None, default: int = 4) -> int:
    return DTYPE_BYTES.get(dtype or "", default)
