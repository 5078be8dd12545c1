"""Load a kernel file under the shims, run it eagerly on NumPy, and turn everything into a RunResult."""

from __future__ import annotations

import ast
import inspect
import itertools
import os
import sys
import time
import traceback
import types

import numpy as np

from ..api import catalogue as nki_api
from ..api.hardware import Target
from ..contracts import callargs
from ..contracts.runs import RunResult
from ..parse.pyast import dotted_name as _decorator_name
from ..rules.registry import get
from . import access_pattern, block_life, context, coverage, liveness, packages, provenance, value_ranges  # noqa: F401 (access_pattern: Tensor.ap)
from .access import box
from .blas import one_blas_thread
from .context import SimContext, StrictStop, UnsupportedAPI, gc_frozen
from .dtypes import UnknownDType, resolve
from .shims import Installed, Kernel, run_grid
from .tensor import SimShapeError, Tensor, allocate, commit_pending

from ..infra.exctext import exception_message
from ..rules.registry import get

_JIT_NAMES = ("jit", "nki_jit", "baremetal", "benchmark", "profile", "simulate_kernel", "trace")
_module_counter = itertools.count(1)


# -- source analysis -------------------------------------------------------------------------------
def kernel_names(tree: ast.Module) -> list[str]:
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(_decorator_name(d).split(".")[-1] in _JIT_NAMES for d in node.decorator_list):
                out.append(node.name)
    return out


def is_legacy(tree: ast.Module) -> bool:
    """neuronxcc.nki imports = legacy dialect (0.1); `import nki` = new dialect."""
    legacy = new = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                legacy |= a.name.startswith("neuronxcc")
                new |= a.name == "nki" or a.name.startswith("nki.")
        elif isinstance(node, ast.ImportFrom) and node.module:
            legacy |= node.module.startswith("neuronxcc") or node.module.startswith("torch_neuronx")
            new |= node.module == "nki" or node.module.startswith("nki.")
    return legacy or not new


def loop_depths(tree: ast.Module) -> dict[int, int]:
    """Line -> number of `for`/`while` statements whose body contains it."""
    depth: dict[int, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor)) and node.body:
            for ln in range(node.body[0].lineno, (node.end_lineno or node.body[-1].lineno) + 1):
                depth[ln] = depth.get(ln, 0) + 1
    return depth


def dynamic_loop_lines(tree: ast.Module) -> set[int]:
    """Lines inside loops whose trip count is a runtime value (`for _ in nl.dynamic_range(reg)`, `while reg:`)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        dyn = isinstance(node, ast.While) or (
            isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, ast.Call)
            and _decorator_name(node.iter.func).split(".")[-1] == "dynamic_range")
        if dyn and node.body:
            lines.update(range(node.body[0].lineno, (node.end_lineno or node.body[-1].lineno) + 1))
    return lines


def loop_bodies(tree: ast.Module) -> dict[int, tuple[int, int]]:
    """Line -> (first, last) line of the innermost `for`/`while` body containing it."""
    body: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor)) and node.body:
            first, last = node.body[0].lineno, node.end_lineno or node.body[-1].lineno
            for ln in range(first, last + 1):
                cur = body.get(ln)
                if cur is None or cur[1] - cur[0] > last - first:
                    body[ln] = (first, last)
    return body


# -- running ---------------------------------------------------------------------------------------
def _to_tensor(ctx: SimContext, value, name: str):
    if isinstance(value, callargs.Output):
        value = value.value
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray) or (not isinstance(value, (type, int, float, complex, str))
                                         and hasattr(value, "__array__") and hasattr(value, "shape")):
        arr = np.asarray(value)
        dt = resolve(arr.dtype)
        data = arr.astype(dt.store, copy=True)
        st = allocate(arr.shape, dt, "shared_hbm", line=None, name=name, data=data, written=True, role="input")
        return Tensor(st)
    return value


# Documented NKI APIs the simulator stops on (not modelled, or not in every variant): from the API catalogue.
NOT_MODELLED = nki_api.simulator_limits()


def documented_api(api: str) -> bool:
    name = api.split("(", 1)[0].strip()
    return name.rsplit(".", 1)[-1] in NOT_MODELLED or ".compiler.backends." in name


def _kernel_line(exc: BaseException, kfile: str) -> int | None:
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == kfile:
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None and isinstance(exc, SyntaxError) and exc.filename == kfile:
        line = exc.lineno
    return line


def _error_result(status, msg, started, notes=None) -> RunResult:
    return RunResult(backend="builtin", status=status, error=msg, elapsed_s=time.perf_counter() - started,
                     notes=notes or [])


def run_kernel(path: str, kernel: str | None, args: list, kwargs: dict | None = None, *, target: Target,
               precise: bool = True, stochastic_rounding: bool = False, seed: int = 0, lenient: bool = True,
               grid: tuple[int, ...] | None = None, trace: bool = True, max_trace: int = 2_000_000,
               sanitize: bool | None = None, function=None, written_args: list | None = None) -> RunResult:
    """Run `kernel` of the file at `path` on `args`. `sanitize`: None (default) runs the kernel a second time
    with the NaN/Inf sanitizer when a store put NaN/Inf into an output, to find the instruction that produced
    them first (RunResult.provenance.faults); True sanitizes from the start (one run); False never.
    `function`: the kernel function a running program already loaded (`nki-assist run`): the file at `path` is
    then read for its source facts only, never executed again. `written_args`: a list that receives
    (position, final array) for each array argument the kernel modified, so a caller can copy them back."""
    started = time.perf_counter()
    try:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
    except OSError as e:
        return _error_result("backend-error", f"cannot read kernel file {path}: {e.strerror or e}", started)
    kfile = os.path.abspath(path)
    try:
        tree = ast.parse(source, filename=kfile)
    except SyntaxError as e:
        res = _error_result("kernel-error", f"{path}:{e.lineno}: syntax error: {e.msg}", started)
        res.error_line = e.lineno

        res.findings.append(get("SIM114").finding(f"the kernel file does not parse: {e.msg}", file=path,
                                                  line=e.lineno or None, source="simulation"))
        return res
    names = kernel_names(tree)
    if kernel is None and function is not None:
        kernel = getattr(function, "__name__", "kernel")
    if kernel is None:
        if len(names) != 1:
            what = "no @nki.jit kernel" if not names else f"several kernels ({', '.join(names)})"
            return _error_result("backend-error", f"{path} has {what}; name the kernel to run", started)
        kernel = names[0]
    ctx = SimContext(target=target, kernel_file=kfile, display_file=path, legacy=is_legacy(tree), precise=precise,
                     stochastic=stochastic_rounding, seed=seed, lenient=lenient, trace=trace, max_trace=max_trace,
                     static_depth=loop_depths(tree))
    ctx.stop_code = sys._getframe(0).f_code
    ctx.source_lines = source.splitlines()
    ctx.loop_body = loop_bodies(tree)
    ctx.dynamic_lines = dynamic_loop_lines(tree)
    ctx.loop_vars = provenance.loop_variables(tree)
    ctx.sanitize = bool(sanitize)
    token = context.activate(ctx)
    status, error, error_line = "ok", None, None
    ret = None
    targs: list = []
    out_args: list = []
    out_storages: list = []
    call_args, call_kw = callargs.split(list(args))
    call_kw = {**call_kw, **(kwargs or {})}
    package = packages.find_package(kfile, callargs.package_root(args))
    call_args = [a for a in call_args if not isinstance(a, callargs.PackageRoot)]
    raw_args = [a.value if isinstance(a, callargs.Output) else a for a in call_args]
    try:
        with Installed(target, kfile, os.path.dirname(kfile), package=package) as inst, one_blas_thread(), \
                gc_frozen():
            try:
                if function is not None:
                    module = None
                elif package is not None:
                    module = packages.import_kernel_module(package)
                else:
                    mod_name = f"nki_assist_kernel_{next(_module_counter)}"
                    module = types.ModuleType(mod_name)
                    module.__file__ = kfile
                    sys.modules[mod_name] = module
                    exec(compile(source, kfile, "exec"), module.__dict__)
                obj = function if function is not None else packages.resolve_kernel(module, kernel, path)
                fn = obj.fn if isinstance(obj, Kernel) else getattr(obj, "__wrapped__", obj)
                if not callable(fn):
                    raise LookupError(f"{kernel!r} in {path} is not a function")
                try:
                    params = list(inspect.signature(fn).parameters)
                except (TypeError, ValueError):
                    params = []
                call_args = [packages.resolve_value(module, a) for a in call_args]
                call_kw = {k: packages.resolve_value(module, v) for k, v in call_kw.items()}
                targs = [_to_tensor(ctx, a, params[i] if i < len(params) else f"arg{i}")
                         for i, a in enumerate(call_args)]
                tkw = {k: _to_tensor(ctx, v, k) for k, v in call_kw.items()}
                out_args = [t for t, a in zip(targs, call_args) if isinstance(a, callargs.Output)]
                out_args += [tkw[k] for k, v in call_kw.items() if isinstance(v, callargs.Output)]
                if grid:
                    ret = run_grid(fn, tuple(grid), targs, tkw)
                else:
                    ret = fn(*targs, **tkw)
                commit_pending(ctx)
            except StrictStop as e:
                status, error, error_line = "kernel-error", f"stopped at the first violation: {e}", e.finding.line
            except UnsupportedAPI as e:
                error_line = _kernel_line(e, kfile)
                status, error = "unsupported", str(e)
                if getattr(e, "missing_module", False):
                    ctx.report_safe("SIM117", error_line, f"{e.api} comes from a module that is not installed in "
                                    "this environment (the simulator stubbed it); the kernel was not run past this "
                                    "call, so numerics and performance are not judged.", api=e.api)
                elif e.limit or documented_api(e.api):  # valid NKI we do not model: the tool stops here
                    ctx.report_safe("SIM117", error_line, f"{e.api} is documented NKI that the built-in simulator "
                                    "does not model; the kernel was not run past this call, so numerics and "
                                    "performance are not judged.", api=e.api)
                else:
                    ctx.report_safe("SIM115", error_line, f"{e.api} is not supported by the built-in simulator; "
                                    "the kernel could not run past this call.", api=e.api)
            except UnknownDType as e:
                error_line = _kernel_line(e, kfile)
                status, error = "unsupported", str(e)
                ctx.report_safe("SIM115", error_line, f"{e}: the simulator (and NKI) has no such dtype.",
                                api="dtype")
            except (SimShapeError, IndexError) as e:
                error_line = _kernel_line(e, kfile)
                status, error = "kernel-error", f"{type(e).__name__}: {e}"
                frames = traceback.extract_tb(e.__traceback__)
                ctx.report_safe("SIM113", error_line, f"the kernel failed with a shape/index error: {e}",
                                exception=type(e).__name__, frames=[f"{os.path.basename(f.filename)}:{f.lineno}"
                                                                    for f in frames[-4:]])
            except LookupError as e:
                status, error = "backend-error", str(e)
            except RecursionError as e:
                error_line = _kernel_line(e, kfile)
                status, error = "kernel-error", "RecursionError: maximum recursion depth exceeded"
                ctx.report_safe("SIM114", error_line, "the kernel raised RecursionError", exception="RecursionError")
            except MemoryError as e:
                error_line = _kernel_line(e, kfile)
                held = block_life.host_bytes(ctx)
                if held > (1 << 30):  # whole block tiles the hardware never holds at once: a tool limit
                    status, error = "unsupported", "MemoryError: block tiles held whole in host memory"
                    ctx.report_safe("SIM117", error_line, f"the simulator holds {held / 2**30:.1f} GiB of the "
                                    "kernel's block tiles in host memory (blocks it cannot prove dead, or tiles "
                                    "accessed across blocks, which it keeps as one array) and ran out of memory "
                                    "here; the hardware holds only the blocks in use. Raise --memory-mb to simulate "
                                    "this size, or simulate a smaller one.", api="block tiles in host memory",
                                    host_bytes=held)
                else:
                    status, error = "out-of-memory", "MemoryError while simulating the kernel"
                    ctx.report_safe("SIM114", error_line, "the kernel ran out of memory in the simulator",
                                    exception="MemoryError")
            except (Exception, SystemExit) as e:  # noqa: BLE001 - any kernel exception becomes a finding
                error_line = _kernel_line(e, kfile)
                said = exception_message(e)  # once, capped: the message is the kernel's, of any size
                status, error = "kernel-error", f"{type(e).__name__}: {said}"
                frames = traceback.extract_tb(e.__traceback__)
                ctx.report_safe("SIM114", error_line, f"the kernel raised {type(e).__name__}: {said}",
                                exception=type(e).__name__, frames=[f"{os.path.basename(f.filename)}:{f.lineno}"
                                                                    for f in frames[-4:]])
            stubbed = inst.stubbed
        liveness.settle(ctx, ctx.report_safe)  # first: block_life adds its extra blocks to this peak
        block_life.settle(ctx, ctx.report_safe)
        outputs = []
        if status == "ok":
            outputs = _collect_outputs(ctx, out_args if out_args else ret, targs, raw_args, out_storages)
            if written_args is not None:
                written_args.extend(_modified_args(targs, raw_args))
        if stubbed:
            ctx.notes.append("missing modules replaced by stubs: " + ", ".join(sorted(set(
                n.split(".")[0] for n in stubbed))))
    finally:
        context.deactivate(token)
        ctx.last_frame = None
        ctx.sites.clear()
        ctx.alloc_log.clear()
    trace_list = [t for t in ctx.trace if t is not None]
    prov = provenance.collect(ctx, out_storages) if status == "ok" else None
    if prov is not None and sanitize is None and provenance.stored_nonfinite(out_storages):
        again = run_kernel(path, kernel, args, kwargs, target=target, precise=precise,
                           stochastic_rounding=stochastic_rounding, seed=seed, lenient=True, grid=grid, trace=False,
                           sanitize=True, function=function)
        if again.status == "ok" and again.provenance is not None:
            prov = again.provenance
    return RunResult(backend="builtin", status=status, outputs=outputs, findings=ctx.finish_findings(),
                     trace=trace_list, peaks=ctx.peaks, elapsed_s=time.perf_counter() - started, notes=ctx.notes,
                     error=error, error_line=error_line, provenance=prov,
                     value_ranges=value_ranges.collect(ctx), loop_trips=dict(ctx.loop_trips))


def _modified_args(targs, raw_args) -> list[tuple[int, np.ndarray]]:
    out = []
    for i, (t, a) in enumerate(zip(targs, raw_args)):
        if isinstance(t, Tensor) and isinstance(a, np.ndarray):
            data = np.asarray(t.st.data).astype(t.st.dt.np_dtype, copy=False)
            if not np.array_equal(data, a, equal_nan=t.st.dt.is_float):
                out.append((i, data))
    return out


def _collect_outputs(ctx: SimContext, ret, targs, raw_args, storages: list) -> list[np.ndarray]:
    if ret is None:
        written = []
        for t, a in zip(targs, raw_args):
            if isinstance(t, Tensor) and isinstance(a, np.ndarray):
                if not np.array_equal(t.st.data, np.asarray(a).astype(t.st.dt.store), equal_nan=t.st.dt.is_float):
                    written.append(t)
        if written:
            ctx.notes.append("the kernel returned nothing; outputs are the arguments it modified")
        rets = written
    elif isinstance(ret, (tuple, list)):
        rets = list(ret)
    else:
        rets = [ret]
    outs = []
    for r in rets:
        if not isinstance(r, Tensor):
            outs.append(np.asarray(r))
            storages.append(None)
            continue
        st = r.st
        storages.append(st)
        if st.role == "output" or st.buffer.endswith("hbm"):
            _check_output(ctx, r)
        if not ctx.legacy and st.buffer != "shared_hbm" and st.role != "input":
            ctx.report_safe("SIM106", st.line, f"kernel output {st.name or ''}{list(st.shape)} is in "
                            f"{st.buffer.upper()}; kernel outputs must be nl.shared_hbm tensors (NKI 0.3+).",
                            buffer=st.buffer)
        key = None if r.is_whole() else r
        data = st.data if key is None else st.data[tuple(slice(a, b) for a, b in box(r))]
        if st.dt.is_float and not ctx.precise:
            outs.append(np.array(data, dtype=np.float32))
        else:
            outs.append(np.asarray(data).astype(st.dt.np_dtype, copy=False))  # the run is over: no copy
    return outs


def _check_output(ctx: SimContext, t: Tensor) -> None:
    """Never-written elements (SIM112, at the statement that should have covered them) and stores that
    overwrote each other (SIM118): see coverage.py."""
    coverage.check_output(ctx, t.st)
