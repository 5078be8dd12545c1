"""What a review is asked to do and what it answers: `ReviewOptions`, `ReviewResult`, the progress callback, and
how a finding's file is shown relative to the spec's folder."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..findings import Finding
from ..schema import Review

Progress = Callable[[str, float], None]


@dataclass
class ReviewOptions:
    target: str | None = None  # overrides the spec's target
    sizes: list[str] | None = None
    backend: str = "builtin"
    run: bool = True  # execute the kernel (simulation, numerics, cost model)
    timeout_s: float = 60.0  # per kernel run
    memory_mb: int = 4096
    llm_timeout_s: float = 60.0
    gpu_precision: str | None = None  # None: from the CUDA kernel's accumulators (fp32 default)
    stochastic: bool = False
    profile: str | None = None  # neuron-profile summary JSON
    llm: str = "none"
    llm_mode: str = "auto"  # structured-output dialect (feedback/llm_modes.py); auto: negotiated
    model: str | None = None
    base_url: str | None = None
    rubric: str | None = None
    cache_dir: str | None = None
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    plots: bool = True
    nki_version: str | None = None  # target NKI version; None: inferred from the kernel's project pins
    distinct_dims: str | None = None  # auto | always | off; None: the spec's [review] distinct_dims (auto)
    repair_budget_s: float = 4.0  # diagnosis: seconds of candidate re-runs per failing size (0: no repairs)


@dataclass
class ReviewResult:
    review: Review
    plots: dict[str, bytes] = field(default_factory=dict)  # name -> PNG
    seconds: float = 0.0


def _rel_display(p: Path | None, base: Path) -> str | None:
    return None if p is None else str(p.relative_to(base)) if p.is_relative_to(base) else str(p)


def _rebase(f: Finding, path: Path, display: str) -> Finding:
    """Simulator findings name the kernel file by its absolute path; reports use the spec-relative one."""
    if f.file and Path(f.file).resolve() == path.resolve():
        return f.model_copy(update={"file": display})
    return f
