"""What running a kernel produces: the contract between the simulator, backends, numerics and perf."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..findings import Finding
from .provenance import Provenance

Engine = Literal["tensor", "vector", "scalar", "gpsimd", "dma", "sync"]
Buffer = Literal["hbm", "shared_hbm", "private_hbm", "sbuf", "psum"]
RunStatus = Literal["ok", "kernel-error", "timeout", "out-of-memory", "unsupported", "backend-error"]


@dataclass(slots=True)
class Operand:
    """One input or output of an instruction."""

    shape: tuple[int, ...]
    dtype: str  # numpy/ml_dtypes name: float32, bfloat16, float8_e4m3, int32, ...
    buffer: Buffer
    partitions: int  # rows on the partition axis (1 for HBM)
    name: str | None = None  # tensor name when known


@dataclass(slots=True)
class TraceEntry:
    """One instruction as the hardware would execute it.

    `free_elems` is elements per partition of the main operand (the output for compute, the SBUF side
    for DMA). For DMA, `bytes` is the payload moved, `transfers` the number of contiguous descriptors,
    `hbm_tensor`/`hbm_box` the HBM region ((start, stop) per dim) so redundant loads can be measured.
    For matmul, `extra` has k (contraction), m (stationary free), n (moving free), `is_transpose`.
    """

    seq: int
    engine: Engine
    op: str  # nc_matmul, activation, tensor_tensor, tensor_scalar, tensor_reduce, tensor_copy,
    #          nc_transpose, memset, iota, dma_load, dma_store, dma_copy, bn_stats, bn_aggr, ...
    line: int | None  # kernel source line (1-based)
    file: str | None
    dst: Operand | None
    srcs: list[Operand] = field(default_factory=list)
    partitions: int = 0
    free_elems: int = 0
    bytes: int = 0
    transfers: int = 0
    hbm_tensor: str | None = None
    hbm_box: tuple[tuple[int, int], ...] | None = None
    direction: Literal["load", "store", "copy"] | None = None  # DMA only
    loop_depth: int = 0  # number of enclosing kernel loops at the call
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ResourcePeaks:
    sbuf_bytes_per_partition: int = 0  # peak live SBUF per partition
    psum_bytes_per_partition: int = 0
    psum_banks: int = 0  # peak live PSUM banks
    sbuf_line: int | None = None  # source line of the allocation that reached the peak
    psum_line: int | None = None


@dataclass(slots=True)
class ValueRange:
    """The argument range one transcendental function reached at one source line over the whole run.

    `min`/`max` are over the finite arguments only (None when none was finite); `nonfinite` counts the
    NaN/Inf arguments (a NaN arriving from upstream, an already-overflowed value). For exp, `max` is what
    NKI402's overflow claim is about; for activations, `below`/`above` count arguments outside the ScalarE
    valid range (hardware.ACTIVATION_VALID_RANGE; magnitudes for reciprocal). `out_dtype` is the result's.
    """

    line: int | None
    func: str  # exp, exp2, power (the base), reciprocal, log, sin, ...
    calls: int = 0
    elements: int = 0
    min: float | None = None
    max: float | None = None
    nonfinite: int = 0
    below: int = 0
    above: int = 0
    out_dtype: str = "float32"
    loop_depth: int = 0


@dataclass(slots=True)
class RunResult:
    backend: str  # builtin | neuron
    status: RunStatus
    outputs: list[np.ndarray] = field(default_factory=list)  # kernel return values, in order
    findings: list[Finding] = field(default_factory=list)  # violations, as Findings (source=simulation)
    trace: list[TraceEntry] = field(default_factory=list)
    peaks: ResourcePeaks = field(default_factory=ResourcePeaks)
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)  # degraded stages, truncated traces, ...
    error: str | None = None  # one-line description when status != ok
    error_line: int | None = None
    provenance: Provenance | None = None  # last writers of the outputs and first NaN/Inf faults (builtin sim)
    value_ranges: list[ValueRange] = field(default_factory=list)  # per (line, function) arguments reached
    loop_trips: dict[int, int] = field(default_factory=dict)  # kernel loop header line -> largest trip count run
