"""Hand-built numerics results: one size's trainium / fp32-storage outputs compared with a reference, and
the simulator's unwritten-output finding when the kernel left elements unstored."""

from __future__ import annotations

import numpy as np

from nki_assist.contracts.runs import RunResult
from nki_assist.numerics.reference import ReferenceResult
from nki_assist.numerics.scenarios import NumericsResult, SizeResult
from nki_assist.rules.registry import get
from nki_assist.contracts.tolerance import compare


def size_result(name: str, bindings: dict[str, int], ref: np.ndarray, out: np.ndarray, *, fp32=None,
                unwritten: int = 0, file: str = "k_nki.py", rtol: float = 1e-3, atol: float = 1e-5) -> SizeResult:
    fp32 = out if fp32 is None else fp32
    sr = SizeResult(name, bindings, None, ReferenceResult("ok", outputs=[ref]))
    sim = [get("SIM112").finding("partly written", file=file, line=9,
                                 evidence={"unwritten_elements": unwritten})] if unwritten else []
    sr.runs["trainium"] = RunResult("builtin", "ok", outputs=[out], findings=sim)
    sr.runs["trainium-fp32"] = RunResult("builtin", "ok", outputs=[fp32])
    sr.agreements[("trainium", "reference")] = [compare(out, ref, rtol=rtol, atol=atol)]
    sr.agreements[("trainium-fp32", "reference")] = [compare(fp32, ref, rtol=rtol, atol=atol)]
    return sr


def numerics(*sizes: SizeResult) -> NumericsResult:
    return NumericsResult(list(sizes), ["reference", "trainium", "trainium-fp32"], "float32", None)
