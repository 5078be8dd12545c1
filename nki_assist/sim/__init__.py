"""Built-in NKI CPU simulator: runs legacy (`neuronxcc.nki`) and new (`nki`) kernels eagerly on NumPy.

`run_kernel` executes a kernel in *this* process (the toolchain's builtin backend wraps it in a child
process with time and memory limits). See docs/simulator.md for what is modelled and the fidelity gaps.
"""

from __future__ import annotations

from ..api.hardware import Target
from ..contracts.runs import RunResult


def run_kernel(path: str, kernel: str | None, args: list, kwargs: dict | None = None, *,
               target: Target, precise: bool = True, stochastic_rounding: bool = False,
               seed: int = 0, lenient: bool = True, grid: tuple[int, ...] | None = None,
               trace: bool = True, max_trace: int = 2_000_000, sanitize: bool | None = None,
               function=None, written_args: list | None = None) -> RunResult:
    """Run `kernel` (None = the only @nki.jit kernel) from the file at `path` on numpy `args`.

    Never raises for kernel problems: violations, exceptions and unsupported APIs come back as findings
    (source="simulation", on the kernel source line) with `status` telling whether the run completed.
    `provenance` holds the last writer of every output element and, when an output received NaN/Inf, the
    instruction that produced them first (a second, sanitized run; `sanitize=True` sanitizes from the start,
    `sanitize=False` never).
    """
    # deferred: `import nki_assist.sim` stays light (the toolchain names the runner; the child runs it)
    from .runner import run_kernel as _run

    return _run(path, kernel, args, kwargs, target=target, precise=precise,
                stochastic_rounding=stochastic_rounding, seed=seed, lenient=lenient, grid=grid,
                trace=trace, max_trace=max_trace, sanitize=sanitize, function=function,
                written_args=written_args)


__all__ = ["run_kernel", "RunResult"]
