"""Capture the CUDA kernel's real outputs: plan each size, launch twice, write the golden files.

Per size: the inputs `review` generates (inputs.generate, same seeds), mapped to the CUDA arguments
of the spec's [cuda] section (cuda_launch.plan: transposed, cast, contiguous), launched twice with
different output fills. An element holding its fill in both runs was never written (NaN in the golden);
the written elements of the two runs give the GPU's run-to-run spread (float atomics differ). The
launcher is pluggable: gpu_launch.py on a GPU, a CPU stand-in in tests.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .. import __version__
from .cuda_compile import Compiled
from .cuda_launch import LaunchPlan, PlannedArg, plan
from .errors import SpecError
from .golden_store import RECORD, SCHEMA, array_hash, size_file
from .inputs import generate

FILL_BYTES = (0xFF, 0x7F)  # run A: all-ones bytes (NaN in every float format), run B: 0x7F bytes


class Launcher(Protocol):
    """Runs a compiled kernel: `launch` copies the arrays in, launches, and returns the final contents
    of the output arrays (in `plan.outputs` order)."""

    name: str

    def device(self) -> dict[str, Any]: ...

    def load(self, compiled: Compiled, kernel: str) -> Any: ...

    def launch(self, handle: Any, plan: LaunchPlan, args: list[Any]) -> list[np.ndarray]: ...


@dataclass
class SizeCapture:
    size: str
    plan: LaunchPlan
    inputs: dict[str, Any]  # spec input name -> the generated value (what review uses)
    outputs: list[np.ndarray] = field(default_factory=list)  # in the reference's layout, NaN where unwritten
    meta: list[dict[str, Any]] = field(default_factory=list)  # per output: dtype, shape, unwritten, run_to_run
    seconds: float = 0.0


def size_inputs(spec, size) -> dict[str, Any]:
    """The inputs of one size exactly as review generates them (never a golden override)."""
    return {n: (s.value if s.is_value else generate(n, s, spec.shape_of(n, size))) for n, s in spec.inputs.items()}


def plan_size(spec, size) -> LaunchPlan:
    cu = spec.cuda
    return plan(cu, cu.kernel or "", spec.inputs, size, spec.shape_of, str(spec.path))


def device_args(p: LaunchPlan, inputs: dict[str, Any], fill: int) -> list[Any]:
    """Host-side arguments: input arrays transposed/cast and C-contiguous, output arrays filled with
    the byte `fill` (or zeros), scalars as NumPy scalars of their C type."""
    out: list[Any] = []
    for a in p.args:
        if a.kind == "input":
            arr = np.asarray(inputs[a.label])
            if a.transpose:
                arr = arr.transpose(a.transpose)
            out.append(np.ascontiguousarray(arr.astype(a.dtype, copy=False)))
        elif a.kind == "output":
            buf = np.empty(a.shape, dtype=a.dtype)
            buf.view(np.uint8)[...] = 0 if a.fill == "zeros" else fill
            out.append(buf)
        else:
            out.append(a.value)
    return out


def _bits(a: np.ndarray) -> np.ndarray:
    """Each element's bytes as one row (bitwise comparison for any dtype, NaN included)."""
    return np.ascontiguousarray(a).view(np.uint8).reshape(a.size, a.dtype.itemsize)


def _fill_mask(a: np.ndarray, fill: int) -> np.ndarray:
    return np.all(_bits(a) == fill, axis=1).reshape(a.shape)


def compare_runs(arg: PlannedArg, run_a: np.ndarray, run_b: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
    """(the golden array in float64 with NaN where never written, metadata) of one output."""
    zero = arg.fill == "zeros"
    unwritten = np.zeros(run_a.shape, bool) if zero else (_fill_mask(run_a, FILL_BYTES[0]) & _fill_mask(run_b, FILL_BYTES[1]))
    a = run_a.astype(np.float64)
    b = run_b.astype(np.float64)
    written = ~unwritten
    same_bits = np.all(_bits(run_a) == _bits(run_b), axis=1).reshape(run_a.shape) & written
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
        ok = written & np.isfinite(diff)
        max_abs = float(diff[ok].max()) if ok.any() else 0.0
        denom = np.abs(a)
        relmask = ok & (denom > 0)
        max_rel = float((diff[relmask] / denom[relmask]).max()) if relmask.any() else 0.0
    golden = np.where(unwritten, np.nan, a)
    meta = {"dtype": run_a.dtype.name, "device_shape": list(arg.shape),
            "unwritten": None if zero else int(unwritten.sum()),
            "run_to_run": {"identical": int(same_bits.sum()), "written": int(written.sum()),
                           "max_abs": max_abs, "max_rel": max_rel}}
    return golden, meta


def capture_size(spec, size, launcher: Launcher, handle: Any) -> SizeCapture:
    t0 = time.perf_counter()
    p = plan_size(spec, size)
    inputs = size_inputs(spec, size)
    runs = [launcher.launch(handle, p, device_args(p, inputs, fill)) for fill in FILL_BYTES]
    cap = SizeCapture(size.name, p, inputs)
    outs = p.outputs
    for j, arg in enumerate(outs):
        if any(len(r) != len(outs) or np.shape(r[j]) != arg.shape for r in runs):
            raise RuntimeError(f"the launcher returned {len(runs[0])} output(s); expected {len(outs)} of the "
                               f"planned shapes")
        golden, meta = compare_runs(arg, np.asarray(runs[0][j]), np.asarray(runs[1][j]))
        if arg.transpose:  # the kernel writes the transpose of the reference's output: undo it
            golden = golden.transpose(np.argsort(arg.transpose))
        meta["shape"] = list(golden.shape)
        cap.outputs.append(golden)
        cap.meta.append(meta)
    cap.seconds = time.perf_counter() - t0
    return cap


def _storage(a: np.ndarray, dtype_name: str) -> np.ndarray:
    """What the outputs npz stores: float32 for float dtypes of 4 bytes or less (exact for bf16, fp16,
    fp8; keeps NaN), float64 otherwise for floats, the integer values as float64 when NaN marks gaps."""
    small_float = dtype_name in ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
    return a.astype(np.float32) if small_float else a


def write_capture(spec, out_dir: Path, captures: list[SizeCapture], *, device: dict[str, Any],
                  compiled: Compiled, launcher: str) -> Path:
    """One inputs/outputs npz pair per size and the golden.json record (merged with an existing record,
    so capturing one size keeps the others)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    record_path = out_dir / RECORD
    sizes: dict[str, Any] = {}
    if record_path.is_file():
        try:
            old = json.loads(record_path.read_text(encoding="utf-8"))
            if isinstance(old, dict) and old.get("schema") == SCHEMA and isinstance(old.get("sizes"), dict):
                if old.get("device") == device:  # one record describes one GPU: a new GPU starts afresh
                    sizes = dict(old["sizes"])
        except (OSError, ValueError):
            pass
    for cap in captures:
        arrays = {n: v for n, v in cap.inputs.items() if isinstance(v, np.ndarray)}
        np.savez(out_dir / size_file(cap.size, "inputs"), **arrays)
        np.savez(out_dir / size_file(cap.size, "outputs"),
                 **{f"arr_{i}": _storage(o, m["dtype"]) for i, (o, m) in enumerate(zip(cap.outputs, cap.meta))})
        sizes[cap.size] = {
            "bindings": spec.size(cap.size).bindings,
            "inputs": {n: {"sha256": array_hash(n, v),
                           **({"shape": list(v.shape), "dtype": v.dtype.name} if isinstance(v, np.ndarray)
                              else {"value": v})} for n, v in cap.inputs.items()},
            "outputs": cap.meta, "launch": cap.plan.to_json(),
            "files": {"inputs": size_file(cap.size, "inputs"), "outputs": size_file(cap.size, "outputs")},
            "seconds": round(cap.seconds, 4),
        }
    record = {"schema": SCHEMA, "nki_assist": __version__,
              "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "spec": spec.path.name, "cuda": spec.port.cuda, "kernel": spec.cuda.kernel, "device": device,
              "launcher": launcher, "compiler": compiled.compiler, "arch": compiled.arch,
              "flags": compiled.options, "sizes": sizes}
    tmp = record_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, default=_json_default) + "\n", encoding="utf-8")
    tmp.replace(record_path)
    return record_path


def _json_default(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return str(v)


def require_cuda(spec) -> None:
    if spec.cuda is None:
        raise SpecError(f"{spec.path}: cuda: no [cuda] section; `nki-assist golden {spec.path} --init` proposes one")
