"""`neuron` backend: the real Neuron toolchain's CPU simulator, cross-checked against `builtin`.

Used when the real toolchain imports in this environment: NKI 0.3+ `nki.simulate(kernel)(*args)`
or legacy `neuronxcc.nki.simulate_kernel(kernel, *args)` (nki-facts.md §3.1). It runs in a child
process like the built-in simulator (it is user code too). The real simulator models neither
SBUF/PSUM capacity nor cost, so the trace, resource peaks and constraint findings come from the
built-in run; the outputs come from the real one, and any disagreement between the two is TC104.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..contracts.runs import RunResult
from ..api.hardware import Target
from ..rules import registry
from ..contracts.tolerance import compare, cross_check_tolerance
from .base import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, Backend, as_target, kernel_def_line, outcome_result
from .builtin import BuiltinBackend
from .sandbox import ChildOutcome, run_in_child

# Error names of the Neuron toolchain (legacy nki.errors catalogue, nki-facts.md §5) -> taxonomy.
ERROR_CATEGORIES: list[tuple[str, str]] = [
    ("err_num_partition_exceed_arch_limit", "partition-limit"),
    ("exceeds architecture limitation", "partition-limit"),
    ("err_size_of_dimension_exceed_arch_limit", "matmul-tile-limit"),
    ("err_num_partition_mismatch", "indexing-error"),
    ("err_tensor_access_out_of_bound", "indexing-error"),
    ("out-of-bound", "indexing-error"),
    ("err_unsupported_memory", "buffer-placement"),
    ("err_unexpected_output_dependencies", "loop-carried-dependency"),
    ("err_tensor_output_not_written_to", "uninitialized-read"),
    ("dst dtype must be float32", "dtype-mismatch"),
    ("err_activation_bias_invalid_type", "dtype-mismatch"),
    ("err_activation_scale_invalid_type", "dtype-mismatch"),
]


def error_category(message: str) -> str | None:
    low = message.lower()
    for needle, category in ERROR_CATEGORIES:
        if needle.lower() in low:
            return category
    return None


def detect() -> tuple[str | None, str]:
    """Which real simulator API imports here: ("new" | "legacy" | None, description)."""
    problems = []
    if importlib.util.find_spec("nki") is not None:
        try:
            nki = importlib.import_module("nki")
            if "nki_assist" in (getattr(nki, "__file__", "") or ""):
                problems.append("`nki` is the nki-assist simulator shim")
            elif callable(getattr(nki, "simulate", None)):
                return "new", f"nki.simulate from {getattr(nki, '__file__', '?')}"
            else:
                problems.append("`nki` imports but has no simulate() (the PyPI placeholder?)")
        except Exception as exc:
            problems.append(f"`import nki` failed: {type(exc).__name__}: {exc}")
    if importlib.util.find_spec("neuronxcc") is not None:
        try:
            legacy = importlib.import_module("neuronxcc.nki")
            if callable(getattr(legacy, "simulate_kernel", None)):
                return "legacy", f"neuronxcc.nki.simulate_kernel from {getattr(legacy, '__file__', '?')}"
            problems.append("neuronxcc.nki has no simulate_kernel()")
        except Exception as exc:
            problems.append(f"`import neuronxcc.nki` failed: {type(exc).__name__}: {exc}")
    return None, "; ".join(problems) or "neither `nki` nor `neuronxcc` is installed"


def _outputs(value: Any) -> list[np.ndarray]:
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return [np.asarray(v) for v in value]
    return [np.asarray(value)]


def child_run(api: str, path: str, kernel: str, args: list, kwargs: dict | None,
              grid: tuple[int, ...] | None) -> dict[str, Any]:
    """Executed inside the child: load the kernel module and run it with the real simulator."""
    name = f"_nki_assist_kernel_{Path(path).stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec.loader.exec_module(module)
        kobj = getattr(module, kernel)
        if grid:
            kobj = kobj[grid if len(grid) > 1 else grid[0]]
        if api == "new":
            import nki

            value = nki.simulate(kobj)(*args, **(kwargs or {}))
        else:
            from neuronxcc import nki as legacy

            value = legacy.simulate_kernel(kobj, *args, **(kwargs or {}))
    return {"outputs": _outputs(value),
            "warnings": [f"{Path(w.filename).name}:{w.lineno}: {w.message}" for w in caught][:50],
            "warning_lines": [w.lineno for w in caught if os.path.abspath(w.filename) == os.path.abspath(path)]}


def _valid_value(value: Any) -> bool:
    """What child_run returns: {"outputs": [ndarray...], "warnings": [str...], ...}."""
    return (isinstance(value, dict) and isinstance(value.get("outputs"), list)
            and all(isinstance(o, np.ndarray) for o in value["outputs"])
            and isinstance(value.get("warnings"), list) and all(isinstance(w, str) for w in value["warnings"]))


class NeuronBackend(Backend):
    name = "neuron"

    def __init__(self, runner: str | None = None, cross_check: bool = True):
        self.builtin = BuiltinBackend(runner)
        self.cross_check = cross_check

    @classmethod
    def available(cls) -> bool:
        return detect()[0] is not None

    @classmethod
    def why_unavailable(cls) -> str | None:
        api, why = detect()
        return None if api else why

    def run(self, kernel_path: str, kernel_name: str | None, args: list[Any], kwargs: dict | None = None, *,
            target: Target | str | None = None, precise: bool = True, stochastic_rounding: bool = False,
            timeout_s: float = DEFAULT_TIMEOUT_S, memory_mb: int = DEFAULT_MEMORY_MB, seed: int = 0,
            grid: tuple[int, ...] | None = None, trace: bool = True, max_trace: int = 2_000_000,
            lenient: bool = True) -> RunResult:
        kernel_path = str(kernel_path)
        tgt = as_target(target)
        api, why = detect()
        if api is None:
            return RunResult(backend=self.name, status="backend-error", error=f"neuron toolchain unavailable: {why}",
                             notes=[f"neuron: unavailable: {why}"])
        env = {"NEURON_PLATFORM_TARGET_OVERRIDE": tgt.name, "NKI_PRECISE_FP": "1" if precise else "0"}
        if stochastic_rounding:
            env["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"
        out = run_in_child("nki_assist.toolchain.neuron:child_run",
                           {"api": api, "path": os.path.abspath(kernel_path), "kernel": kernel_name, "args": list(args),
                            "kwargs": kwargs, "grid": tuple(grid) if grid else None},
                           timeout_s=timeout_s, memory_mb=memory_mb, watch=kernel_path, env=env)
        if out.status == "ok" and not _valid_value(out.value):  # the child's result is data to check, not trust
            out.status, out.in_user_code = "crashed", True
            out.error = "the child returned a malformed result (not outputs of numeric arrays and warning text)"
        if out.status == "error":
            result = self._toolchain_error(out, kernel_path, kernel_name)
        elif out.status != "ok":
            result = outcome_result(self.name, out, kernel_path, kernel_name, timeout_s, memory_mb)
        else:
            result = RunResult(backend=self.name, status="ok", outputs=out.value["outputs"], elapsed_s=out.elapsed_s,
                               notes=[f"neuron: {api} API ({why})"] + [f"neuron warning: {w}" for w in out.value["warnings"]])
        if not self.cross_check:
            return result
        ref = self.builtin.run(kernel_path, kernel_name, args, kwargs, target=tgt, precise=precise,
                               stochastic_rounding=stochastic_rounding, timeout_s=timeout_s, memory_mb=memory_mb,
                               seed=seed, grid=grid, trace=trace, max_trace=max_trace, lenient=lenient)
        # Capacity, cost and constraint findings only exist in the built-in run.
        result.trace, result.peaks = ref.trace, ref.peaks
        result.findings.extend(f for f in ref.findings if f.rule.startswith("SIM") or f.source == "simulation")
        result.notes.append("trace, resource peaks and constraint findings from the builtin simulator")
        if result.status == "ok" and ref.status == "ok":
            result.findings.extend(self._mismatches(result.outputs, ref.outputs, kernel_path, kernel_name))
        elif result.status != ref.status:
            result.notes.append(f"cross-check: neuron status {result.status}, builtin status {ref.status}"
                                + (f" ({ref.error})" if ref.error else ""))
        return result

    def _toolchain_error(self, out: ChildOutcome, path: str, kernel: str | None) -> RunResult:
        line = out.line or kernel_def_line(path, kernel)
        category = error_category(out.error or "")
        spec = registry.get("TC108")
        f = spec.finding(f"The Neuron toolchain rejected the kernel: {out.error}", file=path, line=line,
                         evidence={"backend": self.name, "exception": out.error,
                                   "traceback_tail": out.traceback[-1500:]},
                         confidence="high" if out.line else "medium")
        if category:
            f = f.model_copy(update={"category": category, "criterion": ""})
            f = type(f).model_validate(f.model_dump())  # re-derive the criterion of the new category
        return RunResult(backend=self.name, status="kernel-error", findings=[f], elapsed_s=out.elapsed_s,
                         error=out.error, error_line=out.line)

    def _mismatches(self, neuron: list[np.ndarray], builtin: list[np.ndarray], path: str,
                    kernel: str | None) -> list:
        spec = registry.get("TC104")
        line = kernel_def_line(path, kernel)
        if len(neuron) != len(builtin):
            return [spec.finding(f"nki.simulate returned {len(neuron)} outputs, the builtin simulator {len(builtin)}.",
                                 file=path, line=line, evidence={"neuron_outputs": len(neuron),
                                                                 "builtin_outputs": len(builtin)})]
        found = []
        for i, (a, b) in enumerate(zip(neuron, builtin)):
            if a.shape != b.shape:
                found.append(spec.finding(f"Output {i}: nki.simulate shape {list(a.shape)}, builtin {list(b.shape)}.",
                                          file=path, line=line, evidence={"output": i}))
                continue
            rtol, atol = cross_check_tolerance(b.dtype)
            agr = compare(a, b, rtol=rtol, atol=atol)
            if not agr.passed:
                found.append(spec.finding(
                    f"Output {i}: nki.simulate and the builtin simulator differ in {agr.mismatches} of "
                    f"{agr.elements} elements (max abs {agr.max_abs:.3g}, worst at {list(agr.worst_index or [])}: "
                    f"neuron {agr.worst_actual:.6g} vs builtin {agr.worst_expected:.6g}).",
                    file=path, line=line, evidence={"output": i, **agr.to_json()}))
        return found
