"""`builtin` backend (default): the nki-assist simulator, run in a child process with limits."""

from __future__ import annotations

import os
import re
from typing import Any

from .. import sim
from ..contracts.runs import RunResult
from ..api.hardware import Target
from ..rules import registry
from .base import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, Backend, as_target, kernel_def_line, outcome_result, relabel
from .sandbox import run_in_child

from ..api.hardware import get_target

# The child process imports the runner by name; the name is derived from the import so the dependency
# on the simulator is explicit (and a rename breaks here, not at run time).
DEFAULT_RUNNER = f"{sim.__name__}:{sim.run_kernel.__name__}"
# A test hook: "module:function" with run_kernel's signature used instead of the simulator.
RUNNER_ENV = "NKI_ASSIST_SIM_RUNNER"


def child_run(runner: str, path: str, kernel: str | None, args: list, kwargs: dict | None,
              options: dict[str, Any]) -> RunResult:
    """Executed inside the child: import the runner and call it."""
    import importlib


    mod, fn = runner.split(":")
    run_kernel = getattr(importlib.import_module(mod), fn)
    options = dict(options)
    options["target"] = get_target(options["target"])
    return run_kernel(path, kernel, args, kwargs, **options)


_MEMORY = re.compile(r"\bMemoryError\b|Unable to allocate|_ArrayMemoryError")


class BuiltinBackend(Backend):
    name = "builtin"

    def __init__(self, runner: str | None = None):
        self.runner = runner or os.environ.get(RUNNER_ENV) or DEFAULT_RUNNER

    def run(self, kernel_path: str, kernel_name: str | None, args: list[Any], kwargs: dict | None = None, *,
            target: Target | str | None = None, precise: bool = True, stochastic_rounding: bool = False,
            timeout_s: float = DEFAULT_TIMEOUT_S, memory_mb: int = DEFAULT_MEMORY_MB, seed: int = 0,
            grid: tuple[int, ...] | None = None, trace: bool = True, max_trace: int = 2_000_000,
            lenient: bool = True) -> RunResult:
        kernel_path = str(kernel_path)
        abs_path = os.path.abspath(kernel_path)  # the child runs in a temporary directory
        options = {"target": as_target(target).name, "precise": precise, "stochastic_rounding": stochastic_rounding,
                   "seed": seed, "lenient": lenient, "grid": tuple(grid) if grid else None, "trace": trace,
                   "max_trace": max_trace}
        out = run_in_child("nki_assist.toolchain.builtin:child_run",
                           {"runner": self.runner, "path": abs_path, "kernel": kernel_name, "args": list(args),
                            "kwargs": kwargs, "options": options},
                           timeout_s=timeout_s, memory_mb=memory_mb, watch=kernel_path,
                           preload=(self.runner.split(":")[0],))
        if out.status != "ok":
            return outcome_result(self.name, out, kernel_path, kernel_name, timeout_s, memory_mb)
        result = out.value
        if not isinstance(result, RunResult):
            out.status, out.error = "crashed", f"runner returned {type(result).__name__}, not RunResult"
            return outcome_result(self.name, out, kernel_path, kernel_name, timeout_s, memory_mb)
        result.backend = self.name
        return self._complete(relabel(result, abs_path, kernel_path), kernel_path, kernel_name, memory_mb)

    def _complete(self, r: RunResult, path: str, kernel: str | None, memory_mb: int) -> RunResult:
        """Make sure a failed run carries a finding that says why (the simulator may only set status)."""
        if r.status == "kernel-error" and r.error and _MEMORY.search(r.error):
            r.status = "out-of-memory"
        if r.status in ("ok", "unsupported"):
            return r
        rules = {"kernel-error": "TC106", "out-of-memory": "TC102", "timeout": "TC101", "backend-error": "TC103"}
        wanted = rules[r.status]
        has_line = any(f.line == r.error_line and f.severity.value == "error" for f in r.findings if r.error_line)
        if any(f.rule == wanted for f in r.findings) or (r.status == "kernel-error" and has_line):
            return r
        line = r.error_line or kernel_def_line(path, kernel)
        ev = {"backend": self.name, "error": r.error}
        if r.status == "out-of-memory":
            ev["memory_limit_mb"] = memory_mb
            msg = f"Running the kernel needed more than the {memory_mb} MiB memory limit ({r.error})."
        elif r.status == "kernel-error":
            msg = f"The kernel raised {r.error}"
        else:
            msg = f"The simulation ended with status {r.status}: {r.error}"
        r.findings.append(registry.get(wanted).finding(msg, file=path, line=line, evidence=ev))
        return r
