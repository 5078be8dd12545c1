"""The numerics scenarios, in order: what each runs, when it runs, what it is compared with, which rules
report it. `run_scenarios`, attribution, reconciliation, the review and the report read this table; adding
a scenario is one entry here plus the NUM rule that reports it (docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Scenario:
    name: str  # the key of SizeResult.runs / agreements and of the Review JSON's numerics matrix
    doc: str  # one line: what the scenario shows
    # Backend options of the kernel run; None for a scenario that is not a kernel run (the GPU model).
    kernel_options: dict[str, Any] | None = None
    traced: bool = False  # records the instruction trace; its simulator violations are the ones reported
    enabled_by: str | None = None  # the run option that turns it on (None: always runs)
    compared_with: tuple[str, ...] = ("reference",)  # reference, or another scenario's outputs
    reported_by: tuple[str, ...] = field(default=())  # NUM rules whose evidence it is

    @property
    def is_kernel_run(self) -> bool:
        return self.kernel_options is not None


TRAINIUM = Scenario(
    "trainium", "the kernel as written: every tile rounded to its declared dtype",
    kernel_options={"precise": True}, traced=True, compared_with=("reference", "gpu-model"),
    reported_by=("NUM101", "NUM103", "NUM104", "NUM105", "NUM106"))
TRAINIUM_FP32 = Scenario(
    "trainium-fp32", "the same kernel with fp32 storage everywhere: separates precision loss from a wrong algorithm",
    kernel_options={"precise": False}, reported_by=("NUM101", "NUM102", "NUM103", "NUM105"))
TRAINIUM_SR = Scenario(
    "trainium-sr", "the kernel with stochastic rounding of bf16/fp8 results (`--stochastic`)",
    kernel_options={"precise": True, "stochastic_rounding": True}, enabled_by="stochastic")
GPU_MODEL = Scenario(
    "gpu-model", "the reference at the CUDA kernel's precision (or the spec's golden outputs): what the GPU gave",
    reported_by=("NUM106",))

SCENARIOS: tuple[Scenario, ...] = (TRAINIUM, TRAINIUM_FP32, TRAINIUM_SR, GPU_MODEL)
REFERENCE = "reference"  # what every scenario is compared with first: the spec's NumPy reference, in float64


def kernel_scenarios(**options: bool) -> list[Scenario]:
    """The kernel runs to do, in order, given the run options (`stochastic=True` adds trainium-sr)."""
    return [s for s in SCENARIOS if s.is_kernel_run and (s.enabled_by is None or options.get(s.enabled_by))]


def get(name: str) -> Scenario:
    """The scenario called `name` (looked up at call time, so a test or plug-in may extend SCENARIOS)."""
    for s in SCENARIOS:
        if s.name == name:
            return s
    raise KeyError(f"unknown numerics scenario {name!r}")
