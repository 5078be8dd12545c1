"""Stand-in for nki_assist.sim.run_kernel in sandbox tests: calls a plain NumPy "kernel" directly.

It has run_kernel's signature and returns a RunResult, so the child-process machinery (limits,
lines, result passing) is tested independently of the simulator.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np

from nki_assist.contracts.runs import RunResult, TraceEntry


def run_kernel(path, kernel, args, kwargs=None, *, target, precise=True, stochastic_rounding=False, seed=0,
               lenient=True, grid=None, trace=True, max_trace=2_000_000):
    spec = importlib.util.spec_from_file_location(f"_fake_{Path(path).stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t0 = time.perf_counter()
    fn = getattr(mod, kernel)
    fn = getattr(fn, "fn", fn)  # unwrap a stand-in @nki.jit
    out = fn(*args, **(kwargs or {}))
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    entries = [TraceEntry(seq=0, engine="vector", op="fake", line=None, file=path, dst=None)]
    return RunResult(backend="fake", status="ok", outputs=[np.asarray(o) for o in outs], trace=entries,
                     elapsed_s=time.perf_counter() - t0, notes=[f"target={target.name} precise={precise}"])
