"""Run the port's NumPy reference in float64 on the dtype-rounded inputs.

The reference is user code, so it runs in the same child process mechanism as kernels (time and
memory limits). Every failure (it raises, times out, returns nothing usable, NaN/Inf) comes back
as a `ReferenceResult` with status and a TC105 finding, never as an exception.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..findings import Finding
from ..rules import registry
from ..toolchain.sandbox import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, run_in_child
from .inputs import upcast
from .spec import PortSpec

from ..toolchain.base import kernel_def_line

# The reference is user code whose matmuls run on the host's BLAS: its child pins one kernel family
# (toolchain/sandbox.py `blas_env`, re-exported here for the numerics modules).
from ..toolchain.sandbox import blas_env  # noqa: E402,F401


RefStatus = Literal["ok", "error", "timeout", "out-of-memory", "bad-output", "missing"]


@dataclass
class ReferenceResult:
    status: RefStatus
    outputs: list[np.ndarray] = field(default_factory=list)  # float64 (or the reference's int dtype)
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    line: int | None = None
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def normalize_outputs(value: Any) -> list[np.ndarray]:
    """Reference return value -> list of arrays; TypeError when it is not arrays or numbers."""
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    outs = []
    for i, item in enumerate(items):
        if item is None:
            raise TypeError(f"output {i} is None")
        arr = np.asarray(item)
        if arr.dtype == object or arr.dtype.kind not in "fiub":
            kind = getattr(item, "type_name", type(item).__name__)  # wire.Opaque: a user object that stayed in the child
            raise TypeError(f"output {i} is {kind} (dtype {arr.dtype}), not a numeric array")
        outs.append(arr.astype(np.float64) if arr.dtype.kind == "f" else arr)
    return outs


def run_reference(spec: PortSpec, args: list[Any], *, size_name: str = "", timeout_s: float = DEFAULT_TIMEOUT_S,
                  memory_mb: int = DEFAULT_MEMORY_MB, source: bytes | None = None,
                  fresh: bool = False) -> ReferenceResult:
    """Call the spec's reference on `args` (upcast to float64) in a child process.

    `source`: the reference file's bytes read before any kernel ran (refbatch.read_source); `fresh`: a new
    process, never the warm zygote (a kernel has run since it started)."""
    rule = registry.get("TC105")
    path = spec.reference_path
    if path is None:
        return ReferenceResult("missing", error="the spec has no [port].reference")
    where = f" for size {size_name!r}" if size_name else ""
    ev: dict[str, Any] = {"reference": spec.port.reference, "size": size_name}

    def fail(status: RefStatus, msg: str, line: int | None, elapsed: float, **extra) -> ReferenceResult:
        f = rule.finding(msg, file=str(path), line=line, evidence={**ev, **extra})
        return ReferenceResult(status, findings=[f], error=msg, line=line, elapsed_s=elapsed)

    out = run_in_child("nki_assist.numerics.refchild:child_call",
                       {"path": os.path.abspath(path), "function": spec.reference_function, "args": upcast(args),
                        "source": source},
                       timeout_s=timeout_s, memory_mb=memory_mb, watch=str(path), env=blas_env(), fresh=fresh)
    fn = spec.reference_function
    if out.status == "timeout":
        return fail("timeout", f"The reference {fn} did not finish within {timeout_s:g} s{where}.", out.line,
                    out.elapsed_s, timeout_s=timeout_s)
    if out.status == "out-of-memory":
        return fail("out-of-memory", f"The reference {fn} exceeded the {memory_mb} MiB memory limit{where}.",
                    out.line, out.elapsed_s, memory_limit_mb=memory_mb)
    if out.status != "ok":
        return fail("error", f"The reference {fn} raised {out.error}{where}.", out.line, out.elapsed_s,
                    exception=out.error)
    try:
        outputs = normalize_outputs(out.value)
    except TypeError as exc:
        return fail("bad-output", f"The reference {fn} returned an unusable value{where}: {exc}.", None,
                    out.elapsed_s)
    result = ReferenceResult("ok", outputs=outputs, elapsed_s=out.elapsed_s)
    for i, arr in enumerate(outputs):
        nan, inf = int(np.isnan(arr).sum()) if arr.dtype.kind == "f" else 0, int(np.isinf(arr).sum()) if arr.dtype.kind == "f" else 0
        if nan or inf:
            result.findings.append(rule.finding(
                f"The reference {fn} output {i} has {nan} NaN and {inf} Inf of {arr.size} values{where}; "
                f"elements where the reference is not finite cannot be judged.",
                file=str(path), evidence={**ev, "output": i, "nan": nan, "inf": inf}))
    return result


def check_shapes(ref: ReferenceResult, kernel_outputs: list[np.ndarray], spec: PortSpec, size_name: str) -> list[Finding]:
    """TC107 (error) when the reference's output count differs from the kernel's: outputs that have
    no partner were never compared, so the size cannot pass (shape differences are TC107 too)."""
    if not ref.ok:
        return []
    finding = arity_finding(len(kernel_outputs), len(ref.outputs), spec, size_name)
    return [finding] if finding else []


def arity_finding(n_kernel: int, n_reference: int, spec: PortSpec, size_name: str,
                  file: str | None = None) -> Finding | None:
    """The output-count mismatch as one TC107 finding at the kernel's `def` line (None when equal)."""
    if n_kernel == n_reference:
        return None

    kpath = str(spec.nki_path)
    return registry.get("TC107").finding(
        f"The kernel returned {n_kernel} output{'s' if n_kernel != 1 else ''} for size {size_name!r}, the "
        f"reference {spec.reference_function} {n_reference}: {abs(n_kernel - n_reference)} output(s) could "
        f"not be compared, so the size is not verified.",
        file=file or kpath, line=kernel_def_line(kpath, spec.kernel_name), confidence="medium",
        evidence={"size": size_name, "kernel_outputs": n_kernel, "reference_outputs": n_reference})
