"""The reference's side of a review's batched sizes, run where no kernel code has been (issue 44).

A kernel is user code that may patch NumPy, builtins or nki_assist at import, or rewrite files. So the
reference never shares a process with a kernel: its source is read by the parent once, before any kernel
runs (`read_source`), and the batched sizes' reference and gpu-model outputs come from one child of their
own (`run_references`, running scenarios.child_references) that ends before the kernels' child starts. Later reference runs (the slow path)
use the same bytes in a fresh process (`reference.run_reference(..., fresh=True)`).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..toolchain.sandbox import run_in_child
from .reference import blas_env
from .spec import PortSpec



def read_source(spec: PortSpec) -> bytes | None:
    """The reference file's bytes now (None when the spec names none or it cannot be read: the run then
    reports the missing file as it always did)."""
    if spec.reference_path is None:
        return None
    try:
        return open(spec.reference_path, "rb").read()
    except OSError:
        return None


def _valid(value: Any) -> bool:
    """The child's answer has child_references' shape (it is data from a process that ran user code)."""
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        return False
    return all(r is None or (isinstance(r, list) and all(isinstance(a, np.ndarray) for a in r))
               for v in value.values() for r in v.values())


def run_references(spec: PortSpec, source: bytes | None, jobs: list[dict], *, timeout_s: float, memory_mb: int,
                   stop=None) -> dict[str, dict]:
    """size -> {"reference": outputs, "gpu-model": outputs}; an absent or None entry means the slow path."""
    if spec.reference_path is None or source is None or not jobs:
        return {}
    path = os.path.abspath(spec.reference_path)
    out = run_in_child("nki_assist.numerics.scenarios:child_references",
                       {"path": path, "function": spec.reference_function, "source": source, "jobs": jobs},
                       timeout_s=timeout_s * 2 * len(jobs), memory_mb=memory_mb, watch=str(spec.reference_path),
                       env=blas_env(), stop=stop)
    if out.status != "ok" or not _valid(out.value):
        return {}
    return out.value
