"""One kernel launch of the running program: the simulator on its real arguments, a record, the results.

What the program sees is what the SDK would give it: the kernel's return values as NumPy arrays, arrays it
wrote into copied back into the caller's arrays, `benchmark_result` latency from the cost model. A kernel
that fails raises `KernelFailed` (the SDK would have raised too: a test fails, the program goes on where its
own error handling goes on); a launch the simulator cannot run (an API it does not model, a kernel it cannot
read) raises `SimulatorLimit`, a `unittest.SkipTest`, so pytest reports a skip naming the tool limit rather
than a failure of the kernel.
"""

from __future__ import annotations

import inspect
import json
import os
import time
import unittest

import numpy as np

from ..api.hardware import get_target
from ..perf import estimate
from ..sim import run_kernel
from . import OPTIONS_ENV, TARGET_ENV
from .compare import remember_outputs
from .record import ArgInfo, Launch, append, write_launch
from .source import call_exprs

_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # nki_assist/


class KernelFailed(RuntimeError):
    """The kernel failed on the simulator (what the SDK reports as a compile or run-time error)."""


class SimulatorLimit(unittest.SkipTest):
    """The simulator could not run this launch (a tool limit, not a defect of the kernel)."""


def _options() -> dict:
    try:
        return json.loads(os.environ.get(OPTIONS_ENV) or "{}")
    except ValueError:
        return {}


def _call_site(frame) -> tuple[str | None, int | None]:
    """The first frame outside nki_assist: the program's own line that launched the kernel."""
    while frame is not None:
        fn = os.path.abspath(frame.f_code.co_filename)
        if not fn.startswith(_OWN_DIR + os.sep):
            return fn, frame.f_lineno
        frame = frame.f_back
    return None, None


def _param_names(fn, n: int) -> list[str]:
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]


def describe_args(fn, args, kwargs, exprs) -> list[ArgInfo]:
    out = []
    names = _param_names(fn, len(args))
    items = [(names[i], a, exprs[i], False) for i, a in enumerate(args)]
    items += [(k, v, None, True) for k, v in kwargs.items()]
    for name, value, expr, kw in items:
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            out.append(ArgInfo(name, "array", shape=[int(d) for d in value.shape], dtype=str(value.dtype), expr=expr,
                               keyword=kw))
        elif isinstance(value, (bool, int, float, str)) or value is None or (
                isinstance(value, (tuple, list)) and all(isinstance(v, (bool, int, float, str)) for v in value)):
            out.append(ArgInfo(name, "scalar", value=list(value) if isinstance(value, tuple) else value, expr=expr,
                               keyword=kw))
        else:
            out.append(ArgInfo(name, "other", value=type(value).__name__, expr=expr, keyword=kw))
    return out


def _output_stats(arrays) -> list[dict]:
    stats = []
    for a in arrays:
        a = np.asarray(a)
        entry = {"shape": list(a.shape), "dtype": str(a.dtype)}
        try:
            f = a.astype(np.float64)
            finite = np.isfinite(f)
            entry["nonfinite"] = int(f.size - finite.sum())
            if finite.any():
                entry["min"], entry["max"] = float(f[finite].min()), float(f[finite].max())
        except (TypeError, ValueError):
            pass
        stats.append(entry)
    return stats


def _cost(res, target) -> dict | None:
    if res.status != "ok" or not res.trace:
        return None
    try:
        est = estimate(res, target)
    except Exception:  # noqa: BLE001 - the summary is optional; the launch record stands without it
        return None
    return {"estimated_us": round(est.estimated_time_s * 1e6, 3), "bottleneck": est.bottleneck,
            "engine": est.bottleneck_engine, "mfu_percent": est.mfu_percent}


def _status(res) -> str:
    if res.status in ("unsupported", "backend-error"):
        return "tool-limit"
    return res.status


def _hand_back(res, args, written):
    """Copy arrays the kernel wrote into the caller's arrays; return what the kernel returned."""
    for i, data in written:
        dst = args[i]
        if isinstance(dst, np.ndarray) and dst.flags.writeable and dst.shape == data.shape:
            np.copyto(dst, data.astype(dst.dtype, copy=False), casting="unsafe")
    outs = list(res.outputs)
    if not outs or any(n.startswith("the kernel returned nothing") for n in res.notes):
        return None
    return outs[0] if len(outs) == 1 else tuple(outs)


def launch(fn, args, kwargs, *, api: str, grid=None, caller=None):
    """Run one launch; returns (the program's result, the cost model's seconds or None)."""
    started = time.perf_counter()
    target = get_target(os.environ.get(TARGET_ENV) or "trn2")
    opts = _options()
    code = getattr(fn, "__code__", None)
    path = os.path.abspath(code.co_filename) if code else "<unknown>"
    call_file, call_line = _call_site(caller)
    skip = 1 if api == "simulate_kernel" else 0
    exprs = call_exprs(call_file, call_line, len(args), skip)
    written: list = []
    append({"type": "start", "kernel": getattr(fn, "__qualname__", getattr(fn, "__name__", "kernel")),
            "file": path, "def_line": code.co_firstlineno if code else 0, "pid": os.getpid()})
    res = run_kernel(path, getattr(fn, "__name__", None), list(args), dict(kwargs), target=target,
                     precise=opts.get("precise", True), lenient=True, grid=tuple(grid) if grid else None,
                     function=fn, written_args=written)
    status = _status(res)
    cost = _cost(res, target)
    result = _hand_back(res, list(args), written) if res.status == "ok" else None
    entry = Launch(kernel=getattr(fn, "__qualname__", getattr(fn, "__name__", "kernel")), file=path,
                   def_line=code.co_firstlineno if code else 0, api=api, call_file=call_file, call_line=call_line,
                   args=describe_args(fn, args, kwargs, exprs), grid=list(grid) if grid else None, status=status,
                   error=res.error, error_line=res.error_line,
                   findings=[f.model_dump(mode="json") for f in res.findings],
                   outputs=_output_stats(res.outputs), cost=cost, notes=list(res.notes)[:20],
                   elapsed_s=round(time.perf_counter() - started, 4), pid=os.getpid())
    write_launch(entry)
    where = f"{os.path.basename(path)}:{res.error_line or entry.def_line}"
    if status == "tool-limit":
        raise SimulatorLimit(f"nki-assist run: the simulator cannot run {entry.kernel} ({where}): {res.error} "
                             "(a tool limit, not a defect of the kernel)")
    if res.status != "ok":
        raise KernelFailed(f"kernel {entry.kernel} failed on the simulator at {where}: {res.error}")
    remember_outputs(result, entry)
    return result, (cost or {}).get("estimated_us", 0) / 1e6 if cost else None
