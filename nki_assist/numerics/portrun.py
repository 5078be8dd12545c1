"""Run a port's kernel for one size on a backend, run the reference, and measure the agreement.

This is one scenario (the kernel as the chosen backend runs it); `nki-assist simulate` prints it,
and review/numerics reuse `simulate_size` for their own scenarios.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contracts.runs import ResourcePeaks, RunResult, TraceEntry
from ..findings import Finding
from ..api.hardware import Target
from ..rules import registry
from ..contracts.tolerance import Agreement, compare
from ..toolchain.base import Backend, kernel_def_line
from .guard import budget_bytes, size_guard
from .inputs import make_inputs
from .golden_store import golden_for
from .reference import ReferenceResult, check_shapes, run_reference
from .spec import PortSpec, SizeSpec

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma", "sync")


@dataclass
class SizeRun:
    size: str
    bindings: dict[str, int]
    status: str  # the kernel run's status, or "skipped"
    run: RunResult | None = None
    reference: ReferenceResult | None = None
    agreement: list[Agreement] = field(default_factory=list)  # per kernel output, vs the reference
    golden: list[Agreement] = field(default_factory=list)  # per kernel output, vs [golden] outputs
    golden_not_compared: list[str] = field(default_factory=list)  # why a [golden] output was not compared
    golden_label: str | None = None  # "captured on <GPU> (...)"
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def within_tolerance(self) -> bool | None:
        """True/False when outputs were compared, None when there was nothing to compare."""
        if self.status != "ok" or not self.reference or not self.reference.ok:
            return None
        if any(f.rule == "TC107" for f in self.findings):
            return False
        return all(a.passed for a in self.agreement) if self.agreement else None


def engine_summary(trace: list[TraceEntry]) -> dict[str, dict[str, float]]:
    """Instructions per engine: count and share of all instructions."""
    counts = Counter(e.engine for e in trace)
    total = sum(counts.values())
    order = [e for e in ENGINES if e in counts] + sorted(set(counts) - set(ENGINES))
    return {e: {"count": counts[e], "share": counts[e] / total} for e in order} if total else {}


def peaks_summary(peaks: ResourcePeaks, target: Target) -> dict[str, Any]:
    return {
        "sbuf_bytes_per_partition": peaks.sbuf_bytes_per_partition,
        "sbuf_usable_bytes_per_partition": target.sbuf_usable_bytes_per_partition,
        "sbuf_percent": 100.0 * peaks.sbuf_bytes_per_partition / target.sbuf_usable_bytes_per_partition,
        "sbuf_line": peaks.sbuf_line,
        "psum_bytes_per_partition": peaks.psum_bytes_per_partition,
        "psum_capacity_bytes_per_partition": target.psum_bytes_per_partition,
        "psum_percent": 100.0 * peaks.psum_bytes_per_partition / target.psum_bytes_per_partition,
        "psum_banks": peaks.psum_banks,
        "psum_banks_total": target.psum_banks,
        "psum_line": peaks.psum_line,
    }


def golden_outputs(spec: PortSpec, size: SizeSpec, limit_bytes: int | None = None) -> list[np.ndarray] | None:
    """The captured CUDA outputs of `size` (golden_store.golden_for), or None."""
    got = golden_for(spec, size, limit_bytes)
    return None if got is None else got[0]


def compare_golden(outputs: list[np.ndarray], golden: list[np.ndarray], tol) -> tuple[list[Agreement], list[str]]:
    """Agreement of each kernel output with its golden, and why any was not compared (a count or
    shape that differs is stated, never dropped)."""
    agreements, missing = [], []
    if len(golden) != len(outputs):
        missing.append(f"the golden has {len(golden)} output(s), the kernel returned {len(outputs)}")
    for i, (a, g) in enumerate(zip(outputs, golden)):
        a, g = np.asarray(a), np.asarray(g)
        if a.shape != g.shape:
            missing.append(f"golden output {i} has shape {list(g.shape)}, the kernel's {list(a.shape)}")
        elif g.dtype.kind not in "biufc":
            missing.append(f"golden output {i} has dtype {g.dtype}, not a number type")
        else:
            agreements.append(compare(a, g.astype(np.float64), rtol=tol.rtol, atol=tol.atol))
    return agreements, missing


def simulate_size(spec: PortSpec, size: SizeSpec, backend: Backend, *, target: Target, precise: bool = True,
                  stochastic_rounding: bool = False, timeout_s: float = 60.0, memory_mb: int = 4096,
                  with_reference: bool = True) -> SizeRun:
    """Inputs, kernel run, reference run and per-output agreement for one size; never raises for
    anything the kernel or the reference does (spec problems raise SpecError)."""
    t0 = time.perf_counter()
    kpath = str(spec.nki_path)
    sr = SizeRun(size=size.name, bindings=size.bindings, status="skipped")
    too_big = size_guard(spec, size, memory_mb)  # before any allocation
    if too_big is not None:
        sr.findings.append(too_big)
        sr.notes.append(f"size {size.name}: skipped (inputs too large for --memory-mb {memory_mb})")
        return sr
    args = make_inputs(spec, size, budget_bytes(memory_mb))
    run = backend.run(kpath, spec.kernel_name, args, target=target, precise=precise,
                      stochastic_rounding=stochastic_rounding, timeout_s=timeout_s, memory_mb=memory_mb,
                      grid=spec.grid)
    sr.run, sr.status = run, run.status
    sr.findings.extend(run.findings)
    sr.notes.extend(run.notes)
    if with_reference and spec.reference_path is not None:
        ref = run_reference(spec, args, size_name=size.name, timeout_s=timeout_s, memory_mb=memory_mb)
        sr.reference = ref
        sr.findings.extend(ref.findings)
        if run.status == "ok" and ref.ok:
            sr.findings.extend(check_shapes(ref, run.outputs, spec, size.name))
            sr.findings.extend(_agreement(sr, spec, run.outputs, ref.outputs, kpath))
    elif with_reference:
        sr.notes.append("no reference in the spec: outputs not compared")
    got = golden_for(spec, size, budget_bytes(memory_mb), args)
    if got is not None:
        sr.golden_label = got[1].get("label")
        if run.status == "ok":
            sr.golden, sr.golden_not_compared = compare_golden(run.outputs, got[0], spec.tolerance)
        else:
            sr.golden_not_compared.append(f"the kernel run ended with {run.status}")
    sr.elapsed_s = time.perf_counter() - t0
    return sr


def _agreement(sr: SizeRun, spec: PortSpec, kernel_outs: list[np.ndarray], ref_outs: list[np.ndarray],
               kpath: str) -> list[Finding]:
    rule = registry.get("TC107")
    line = kernel_def_line(kpath, spec.kernel_name)
    tol = spec.tolerance
    found = []
    for i, (a, e) in enumerate(zip(kernel_outs, ref_outs)):
        a = np.asarray(a)
        if a.shape != e.shape:
            found.append(rule.finding(
                f"Output {i} has shape {list(a.shape)} for size {sr.size!r}, the reference {list(e.shape)}.",
                file=kpath, line=line, confidence="medium",
                evidence={"size": sr.size, "output": i, "kernel_shape": list(a.shape), "reference_shape": list(e.shape)}))
            continue
        agr = compare(a, e, rtol=tol.rtol, atol=tol.atol)
        sr.agreement.append(agr)
        if not agr.passed:
            nonfinite = f", {agr.nan_actual} NaN and {agr.inf_actual} Inf in the output" if (agr.nan_actual or agr.inf_actual) else ""
            found.append(rule.finding(
                f"Output {i} differs from the reference for size {sr.size!r}: {agr.mismatches} of {agr.elements} "
                f"elements ({100 * agr.mismatch_fraction:.2f}%) outside rtol={tol.rtol:g}, atol={tol.atol:g}; "
                f"max abs {agr.max_abs:.3g}, max rel {agr.max_rel:.3g}, worst at {list(agr.worst_index or [])} "
                f"(kernel {agr.worst_actual:.6g}, reference {agr.worst_expected:.6g}){nonfinite}.",
                file=kpath, line=line, confidence="medium", evidence={"size": sr.size, "output": i, **agr.to_json()}))
    return found
