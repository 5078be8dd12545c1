"""Run a port under every numerical scenario, on every size, and compare each with the reference.

Scenarios (issue 4):
  reference       the NumPy reference in float64 on the dtype-rounded inputs
  trainium        the kernel in the simulator with real storage dtypes (bf16/fp8 rounding)
  trainium-fp32   the same kernel with fp32 storage: isolates algorithm bugs from rounding
  gpu-model       the reference evaluated at the CUDA kernel's accumulation precision (best estimate of
                  the CUDA output), or the spec's [golden] outputs when given
  trainium-sr     optional: stochastic rounding
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..contracts.runs import RunResult
from ..findings import Finding
from ..api.hardware import Target
from ..contracts.tolerance import Agreement, compare
from ..toolchain.base import relabel
from ..toolchain.sandbox import run_in_child
from .guard import budget_bytes, size_guard, size_need_bytes
from ..contracts.callargs import map_values
from .inputs import make_inputs, upcast
from .reference import ReferenceResult, arity_finding, blas_env, normalize_outputs, run_reference
from .spec import PortSpec, SizeSpec

from .golden_store import golden_for
from ..api.hardware import get_target
from .refbatch import read_source, run_references
from ..toolchain.builtin import BuiltinBackend
from .registry import GPU_MODEL, REFERENCE, TRAINIUM, kernel_scenarios
from .registry import get as scenario

GPU_PRECISIONS = ("float32", "float16", "tf32", "float64")

Progress = Callable[[str, float], None]


@dataclass
class SizeResult:
    size: str
    bindings: dict[str, int]
    reduction_length: int | None
    reference: ReferenceResult
    runs: dict[str, RunResult] = field(default_factory=dict)
    gpu_model: list[np.ndarray] | None = None
    gpu_model_source: str | None = None  # "reference@float32", "captured on <GPU> (...)", ...
    gpu_spread: list[dict] | None = None  # per output: the capture's run-to-run spread (golden.json)
    # (scenario, against) -> one Agreement per output (None when shapes differ)
    agreements: dict[tuple[str, str], list[Agreement | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def agreement(self, scenario: str, against: str = REFERENCE) -> list[Agreement | None]:
        return self.agreements.get((scenario, against), [])

    def passed(self, scenario: str, against: str = REFERENCE) -> bool | None:
        """True/False when compared; None when the scenario did not produce comparable outputs."""
        ags = self.agreement(scenario, against)
        if not ags or any(a is None for a in ags):
            return None
        return all(a.passed for a in ags)


@dataclass
class NumericsResult:
    sizes: list[SizeResult]
    scenarios: list[str]
    gpu_precision: str | None
    reduction_symbol: str | None
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # kernel/reference findings collected per run
    seconds: float = 0.0
    skipped: dict[str, str] = field(default_factory=dict)  # size -> why it did not run (the size guard)
    cancelled: bool = False
    added: dict[str, str] = field(default_factory=dict)  # sizes the tool added (spec.added): name -> why

    def user_sizes(self) -> list[SizeResult]:
        """The sizes of the spec file, without the ones the tool added (growth fits, gaps, cost model)."""
        return [s for s in self.sizes if s.size not in self.added]


_HALO = 16  # widest stencil halo taken for padding, not reduction (a 17x17 window)


def reduction_symbol(spec: PortSpec, output_shapes: list[tuple[int, ...]], size: SizeSpec) -> str | None:
    """The size symbol that is reduced over: bound in the inputs but absent from every output dim.

    With several candidates the largest is taken (K of a GEMM is larger than a batch of 1). A padded extent
    (a convolution's H + 2 input rows for H output rows) is a halo, not a reduction: within _HALO of an output
    dim it is no candidate."""
    b = size.bindings
    out_dims = {d for shape in output_shapes for d in shape}
    used = {s for inp in spec.inputs.values() for s in inp.symbols}
    cands = [s for s in used if b.get(s) not in out_dims
             and not any(0 < b.get(s, 0) - d <= _HALO for d in out_dims)]
    return max(cands, key=lambda s: b[s]) if cands else None


def _tf32(x: np.ndarray) -> np.ndarray:
    """Round float32 values to TF32 (10 explicit mantissa bits), round-to-nearest-even."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    lsb = (bits >> 13) & 1
    bits = ((bits + 0xFFF + lsb) >> 13) << 13
    return bits.astype(np.uint32).view(np.float32)


def gpu_model_args(args: list[Any], precision: str) -> list[Any]:
    """Inputs as the CUDA kernel computes with them: float arrays cast to its accumulation dtype."""

    def cast(a):
        if isinstance(a, np.ndarray) and a.dtype == np.float64:
            if precision == "float16":
                a = a.astype(np.float16)
            elif precision == "tf32":
                a = _tf32(a.astype(np.float32))
            elif precision == "float32":
                a = a.astype(np.float32)
        return a

    return map_values(upcast(args), cast)  # keyword / output markers kept for the reference's child


def _compare_all(actual: list[np.ndarray], expected: list[np.ndarray], rtol: float, atol: float) -> list[Agreement | None]:
    res: list[Agreement | None] = []
    for i in range(max(len(actual), len(expected))):
        if i >= len(actual) or i >= len(expected) or np.shape(actual[i]) != np.shape(expected[i]):
            res.append(None)
        else:
            res.append(compare(actual[i], expected[i], rtol=rtol, atol=atol))
    return res


def _golden(spec: PortSpec, size: SizeSpec, limit_bytes: int | None = None) -> tuple[list[np.ndarray], dict] | None:
    """The captured CUDA outputs of this size in float64, and the capture's label and per-output
    run-to-run spread (golden_store.golden_for)."""
    got = golden_for(spec, size, limit_bytes)
    return None if got is None else ([np.asarray(o).astype(np.float64) for o in got[0]], got[1])


class Started:
    """The first part of `run_scenarios`, begun ahead of the rest: the size guard, the inputs of the batched sizes
    and their one child run, which with `background=True` goes on in a thread while the caller does other work
    (the review's static checks; `review.py`). Give it to `run_scenarios` with the same options."""

    def __init__(self, spec: PortSpec, *, target: Target, backend, sizes: list[str] | None = None,
                 gpu_precision: str | None = "float32", stochastic: bool = False, timeout_s: float = 60.0,
                 memory_mb: int = 4096, background: bool = False, started: Callable[["Started"], None] | None = None):
        self.t0 = time.perf_counter()
        self.ref_source = read_source(spec)  # once, before any kernel runs: a kernel may rewrite the file
        self._batches: dict | None = None
        self._error: BaseException | None = None
        self._thread = self._stop = None
        if started is not None:  # the caller can abandon it even if this constructor is interrupted
            started(self)
        self.backend, self.gpu_precision = backend, gpu_precision
        self.chosen = [spec.size(n) for n in sizes] if sizes else list(spec.sizes)
        self.scen = [s.name for s in kernel_scenarios(stochastic=stochastic)]
        self.budget = budget = budget_bytes(memory_mb)
        self.skipped: list[tuple[SizeSpec, Finding]] = []
        for size in list(self.chosen):  # the size guard runs before anything is allocated
            too_big = size_guard(spec, size, memory_mb)
            if too_big is not None:
                self.skipped.append((size, too_big))
                self.chosen.remove(size)
        # One child runs the first sizes whose arguments fit the budget together; the rest run one by one,
        # their inputs generated only when their turn comes and released after.
        batched, used = [], 0
        for size in self.chosen:
            need = size_need_bytes(spec, size)
            if used + need > budget:
                break
            batched.append(size)
            used += need
        self.inputs = {size.name: make_inputs(spec, size, budget) for size in batched}
        self.goldens = {size.name: _golden(spec, size, budget) for size in batched}
        jobs = [(s.name, self.inputs[s.name], self.goldens[s.name] is None) for s in batched]
        args = (spec, jobs, self.scen, target, backend, gpu_precision, timeout_s, memory_mb, self.ref_source)
        if background and jobs and isinstance(backend, BuiltinBackend):
            import threading  # deferred: only the review starts the batch ahead

            from ..toolchain.sandbox import prestart

            # a warm zygote started by this thread, not by the short-lived one below (it would die with it)
            prestart()
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(*args, self._stop), name="nki-assist-batch",
                                            daemon=True)
            self._thread.start()
        else:
            self._run(*args)

    def _run(self, *args) -> None:
        try:
            self._batches = _batch(*args) or {}
        except BaseException as exc:  # raised where run_scenarios would have raised it
            self._error = exc

    def batches(self) -> dict[str, dict[str, Any]]:
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._batches or {}

    def abandon(self) -> None:
        """Kill the batch run if it is still going and wait for its clean-up (its processes swept, its
        folder removed): for a review that ends early (Ctrl-C, an error, cancellation)."""
        if self._stop is not None:
            self._stop.set()
        if self._thread is not None and self._thread.ident is not None:  # started
            self._thread.join()


def run_scenarios(spec: PortSpec, *, target: Target, backend, sizes: list[str] | None = None,
                  gpu_precision: str | None = "float32", stochastic: bool = False, timeout_s: float = 60.0,
                  memory_mb: int = 4096, progress: Progress | None = None,
                  cancelled: Callable[[], bool] | None = None, started: Started | None = None) -> NumericsResult:
    """Run every scenario on every selected size; never raises for anything user code does.

    `gpu_precision=None` (a port with no CUDA kernel) models no GPU output: gpu-model runs only from golden files.
    `started`: the batch begun ahead with the same options (`Started`)."""
    if started is None:
        started = Started(spec, target=target, backend=backend, sizes=sizes, gpu_precision=gpu_precision,
                          stochastic=stochastic, timeout_s=timeout_s, memory_mb=memory_mb)
    t0 = started.t0
    chosen, scen, budget = started.chosen, started.scen, started.budget
    rtol, atol = spec.tolerance.rtol, spec.tolerance.atol
    models_gpu = gpu_precision is not None or spec.golden is not None
    result = NumericsResult([], [REFERENCE, *scen, *([GPU_MODEL.name] if models_gpu else [])], gpu_precision, None,
                            added=dict(spec.added))
    found = result.findings  # an added size's own findings go to `extra`, kept where no spec size has them
    extra: list[Finding] = []
    steps = (len(chosen) + len(started.skipped)) * (len(scen) + 2)
    step = 0

    def tick(msg: str) -> None:
        nonlocal step
        step += 1
        if progress:
            progress(msg, 100.0 * step / max(steps, 1))

    if progress:
        progress(f"simulating {len(chosen) + len(started.skipped)} size(s) x {len(scen)} scenario(s) and the "
                 "reference", 1.0)
    for size, too_big in started.skipped:
        result.findings.append(too_big)
        result.skipped[size.name] = too_big.message
        step += len(scen) + 2
    inputs, goldens = started.inputs, started.goldens
    batches = started.batches()
    for size in chosen:
        if cancelled and cancelled():
            result.notes.append("cancelled before all sizes ran")
            result.cancelled = True
            break
        result.findings = extra if size.name in spec.added else found
        if size.name in inputs:
            args, golden = inputs.pop(size.name), goldens.pop(size.name)
        else:
            args, golden = make_inputs(spec, size, budget), _golden(spec, size, budget)
        batch = batches.get(size.name)
        ref = batch.get(REFERENCE) if batch else None
        if ref is None:
            ref = run_reference(spec, args, size_name=size.name, timeout_s=timeout_s, memory_mb=memory_mb,
                                source=started.ref_source, fresh=True)
        result.findings.extend(ref.findings)
        tick(f"{size.name}: reference")
        sr = SizeResult(size.name, size.bindings, None, ref)
        for name in scen:
            run = (batch or {}).get(name)
            if run is None:  # slow path: its own child, with the backend's full error reporting
                run = backend.run(str(spec.nki_path), spec.kernel_name, args, target=target, timeout_s=timeout_s,
                                  memory_mb=memory_mb, grid=spec.grid, trace=scenario(name).traced,
                                  **scenario(name).kernel_options)
            sr.runs[name] = run
            if scenario(name).traced:  # violations are the same in every scenario; report them once
                result.findings.extend(run.findings)
            tick(f"{size.name}: {name}")
        if golden is not None:
            sr.gpu_model, sr.gpu_model_source = golden[0], golden[1]["label"]
            sr.gpu_spread = [o.get("run_to_run") or {} for o in golden[1].get("outputs") or []] or None
        elif batch and batch.get(GPU_MODEL.name) is not None:  # the batch models the GPU only without golden
            sr.gpu_model, sr.gpu_model_source = batch[GPU_MODEL.name], f"reference@{gpu_precision}"
        elif ref.ok and gpu_precision is not None:
            out = run_in_child("nki_assist.numerics.refchild:child_call",
                               {"path": os.path.abspath(spec.reference_path), "function": spec.reference_function,
                                "args": gpu_model_args(args, gpu_precision), "source": started.ref_source},
                               timeout_s=timeout_s, memory_mb=memory_mb, watch=str(spec.reference_path),
                               env=blas_env(), fresh=True)
            if out.status == "ok":
                try:
                    sr.gpu_model = normalize_outputs(out.value)
                    sr.gpu_model_source = f"reference@{gpu_precision}"
                except TypeError as exc:
                    sr.notes.append(f"gpu-model: {exc}")
            else:
                sr.notes.append(f"gpu-model: reference at {gpu_precision} failed: {out.error}")
        tick(f"{size.name}: gpu-model")
        if ref.ok:
            for name, run in sr.runs.items():
                if run.status == "ok" and run.outputs:
                    sr.agreements[(name, REFERENCE)] = _compare_all(run.outputs, ref.outputs, rtol, atol)
            if sr.gpu_model is not None:
                sr.agreements[(GPU_MODEL.name, REFERENCE)] = _compare_all(sr.gpu_model, ref.outputs, rtol, atol)
            if result.reduction_symbol is None and size.name not in spec.added:  # named by the spec's sizes
                result.reduction_symbol = reduction_symbol(spec, [o.shape for o in ref.outputs], size)
        trn = sr.runs.get(TRAINIUM.name)
        if ref.ok and trn is not None and trn.status == "ok":
            mismatch = arity_finding(len(trn.outputs), len(ref.outputs), spec, size.name)
            if mismatch is not None:
                result.findings.append(mismatch)
        if sr.gpu_model is not None and trn is not None and trn.status == "ok":
            sr.agreements[(TRAINIUM.name, GPU_MODEL.name)] = _compare_all(trn.outputs, sr.gpu_model, rtol, atol)
        if result.reduction_symbol:
            sr.reduction_length = size.bindings.get(result.reduction_symbol)
        result.sizes.append(sr)
    result.findings = found + _added_only(found, extra, spec.added)
    result.seconds = time.perf_counter() - t0
    return result


def _added_only(found: list[Finding], extra: list[Finding], added: dict[str, str]) -> list[Finding]:
    """Findings of the added sizes that no size of the spec has (same rule and line), each naming its size in
    its evidence (the review says in the message why that size exists)."""
    seen = {(f.rule, f.file, f.line) for f in found}
    out = []
    for f in extra:
        if (f.rule, f.file, f.line) in seen:
            continue
        seen.add((f.rule, f.file, f.line))
        name = f.evidence.get("size") if f.evidence.get("size") in added else next(iter(added), None)
        out.append(f.model_copy(update={"evidence": {**f.evidence, "size": name, "added_size": True}}))
    return out


def _num(v: float | None) -> float | str | None:
    if v is None:
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else "inf"
    return v


def matrix_rows(res: NumericsResult) -> list[dict[str, Any]]:
    """The scenario x size table of the Review JSON (`numerics.matrix`)."""
    rows = []
    for sr in res.sizes:
        for (scenario, against), ags in sr.agreements.items():
            for i, ag in enumerate(ags):
                row: dict[str, Any] = {"size": sr.size, "scenario": scenario, "against": against, "output": i}
                if ag is None:
                    row.update(passed=False, note="output count or shape differs")
                else:
                    row.update({k: _num(v) if isinstance(v, float) else v for k, v in ag.to_json().items()
                                if k in ("max_abs", "max_rel", "max_ulp", "mean_abs", "mismatch_fraction",
                                         "nan_actual", "inf_actual", "worst_index", "passed", "dtype")})
                rows.append(row)
        for name, run in sr.runs.items():
            if run.status != "ok":
                rows.append({"size": sr.size, "scenario": name, "against": REFERENCE, "output": None,
                             "passed": False, "note": f"{run.status}: {run.error or ''}".strip()})
    return rows



def child_batch(runner: str, path: str, kernel: str | None, jobs: list[dict], scenarios: dict[str, dict],
                options: dict[str, Any]) -> dict[str, dict]:
    """Executed in ONE child: every kernel scenario, for every size (the reference never runs here: the
    kernel's module may have patched NumPy or nki_assist; refbatch.py runs it before, in its own child).

    One process start instead of three per size keeps a two-size review within seconds. Anything that
    goes wrong is returned as None for that entry and redone on the slow path, which reports it
    precisely (its own child, with the backend's error handling).
    """
    import importlib

    mod, fn = runner.split(":")
    run_kernel = getattr(importlib.import_module(mod), fn)
    results: dict[str, dict] = {}
    for job in jobs:
        out: dict[str, Any] = {}
        for name, extra in scenarios.items():
            opts = dict(options, **extra)
            opts["target"] = get_target(opts["target"])
            try:
                res = run_kernel(path, kernel, job["args"], None, **opts)
                out[name] = res if res.status == "ok" else None
            except Exception:
                out[name] = None
        results[job["size"]] = out
    return results


def child_references(path: str, function: str, source: bytes, jobs: list[dict]) -> dict[str, dict]:
    """In the reference's own child (refbatch.run_references; no kernel runs there): for each size the reference
    on float64 inputs and, when asked, at the GPU's precision. A failure is None (the slow path reports it)."""
    from .refchild import child_call  # deferred: only the reference's child calls the user's reference

    results: dict[str, dict] = {}
    for job in jobs:
        args, out = job["args"], {}
        gpu = gpu_model_args(args, job["gpu_precision"]) if job["gpu_precision"] else None
        for key, a in ((REFERENCE, upcast(args)), (GPU_MODEL.name, gpu)):
            if a is None:
                continue
            try:
                out[key] = normalize_outputs(child_call(path, function, a, source))
            except Exception:
                out[key] = None
        results[job["size"]] = out
    return results


def _batch_ok(value: Any, scen: list[str]) -> bool:
    """The child's result has child_batch's shape (it is data from a process that ran user code)."""
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        return False
    for v in value.values():
        if any(v.get(n) is not None and not isinstance(v[n], RunResult) for n in scen):
            return False
        for key in (REFERENCE, GPU_MODEL.name):
            r = v.get(key)
            if r is not None and not (isinstance(r, list) and all(isinstance(a, np.ndarray) for a in r)):
                return False
    return True


def _batch(spec: PortSpec, jobs: list[tuple[str, list, bool]], scen: list[str], target: Target, backend,
           gpu_precision: str | None, timeout_s: float, memory_mb: int, ref_source: bytes | None = None,
           stop=None) -> dict[str, dict[str, Any]] | None:
    """Fast path for the builtin backend: size -> entries; None or a missing entry means slow path. The
    reference's child runs to its end before the kernels' child starts."""

    if not isinstance(backend, BuiltinBackend) or not jobs:
        return None
    ref_path = os.path.abspath(spec.reference_path) if spec.reference_path else None
    refs = run_references(spec, ref_source, [
        {"size": name, "args": list(args), "gpu_precision": gpu_precision if want_gpu else None}
        for name, args, want_gpu in jobs], timeout_s=timeout_s, memory_mb=memory_mb, stop=stop) if ref_path else {}
    if stop is not None and stop.is_set():
        return None
    scenarios = {n: dict(scenario(n).kernel_options, trace=scenario(n).traced) for n in scen}
    options = {"target": target.name, "seed": 0, "lenient": True, "grid": spec.grid, "max_trace": 2_000_000}
    kpath = os.path.abspath(spec.nki_path)
    payload = [{"size": name, "args": list(args)} for name, args, _ in jobs]
    out = run_in_child("nki_assist.numerics.scenarios:child_batch",
                       {"runner": backend.runner, "path": kpath, "kernel": spec.kernel_name,
                        "jobs": payload, "scenarios": scenarios, "options": options},
                       timeout_s=timeout_s * len(scen) * len(jobs), memory_mb=memory_mb,
                       watch=str(spec.nki_path), env=blas_env(), stop=stop)
    kernels = out.value if out.status == "ok" and _batch_ok(out.value, scen) else {}
    result: dict[str, dict[str, Any]] = {}
    for name, _, _ in jobs:
        value = {**{k: v for k, v in (kernels.get(name) or {}).items() if k in scen},
                 **{k: v for k, v in (refs.get(name) or {}).items() if k in (REFERENCE, GPU_MODEL.name)}}
        for n in scen:
            if value.get(n) is not None:
                value[n].backend = backend.name
                relabel(value[n], kpath, str(spec.nki_path))
        if value.get(REFERENCE) is not None:
            outs = value[REFERENCE]
            if any(o.dtype.kind == "f" and not np.all(np.isfinite(o)) for o in outs):
                value[REFERENCE] = None  # NaN/Inf: the slow path attaches the TC105 note
            else:
                value[REFERENCE] = ReferenceResult("ok", outputs=outs)
        result[name] = value
    return result
