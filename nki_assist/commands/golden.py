"""`nki-assist golden PORT.toml`: capture the CUDA kernel's real outputs on a GPU as [golden] files."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from .exits import EXIT_ERROR, EXIT_OK, UsageError

DESCRIPTION = ("Compile the port's CUDA kernel (NVRTC, or nvcc as a fallback, with nvcc's default math flags), "
               "launch it on a GPU for every size on exactly the inputs `review` generates, as the spec's [cuda] "
               "section describes, twice with different output fills (never-written elements, run-to-run "
               "spread), and write one golden npz pair per size plus golden.json (GPU, driver, CUDA version, "
               "flags, input hashes). --dry-run checks the mapping and compiles without a GPU; --init proposes "
               "a [cuda] section from the CUDA file. Needs pip install 'nki-assist[gpu]' to capture.")
SCHEMA = "nki-assist/golden-run@1"
LAUNCHER_ENV = "NKI_ASSIST_GOLDEN_LAUNCHER"  # module:factory of another launcher (a CPU stand-in in tests)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="PORT.toml", help="port spec with a [cuda] section (docs/toolchain.md 'Golden')")
    p.add_argument("--size", action="append", metavar="NAME", help="capture only this size (repeatable)")
    p.add_argument("--dry-run", action="store_true",
                   help="check the [cuda] mapping against the CUDA signature and compile, without a GPU")
    p.add_argument("--init", action="store_true",
                   help="print a proposed [cuda] section from the CUDA file's signature and launcher")
    p.add_argument("--out", metavar="DIR", help="capture folder (default: the spec's [golden] dir, else golden/)")
    p.add_argument("--compiler", choices=["auto", "nvrtc", "nvcc"], default="auto",
                   help="compiler for --dry-run (default: NVRTC when cuda-python is installed, else nvcc)")
    p.add_argument("--arch", metavar="SM", help="architecture for --dry-run (default: cuda.arch or sm_80)")
    p.add_argument("--format", choices=["text", "json"], default="text", help="output format (default: text)")


def _launcher():
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..numerics.gpu_launch import find_launcher

    custom = os.environ.get(LAUNCHER_ENV)
    if custom:
        mod, _, attr = custom.partition(":")
        return getattr(importlib.import_module(mod), attr)()
    return find_launcher()


def _plans(spec, sizes, kernel, where: str):
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..numerics.cuda_signature import check_signature
    from ..numerics.golden_capture import plan_size

    plans = [plan_size(spec, s) for s in sizes]
    problems = check_signature(plans[0], kernel, where) if plans else []
    if problems:
        raise UsageError("the [cuda] arguments do not fit the kernel:\n  " + "\n  ".join(problems))
    return plans


def run(args: argparse.Namespace) -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..numerics.cuda_compile import DEFAULT_ARCH, compile_kernel
    from ..numerics.cuda_signature import find_kernel, propose, read_cuda
    from ..numerics.golden_capture import require_cuda
    from ..numerics.spec import SpecError, load_spec

    try:
        spec = load_spec(args.spec)
        if args.init:
            sys.stdout.write(propose(spec, _reference_shapes(spec)))
            return EXIT_OK
        require_cuda(spec)
        sizes = [spec.size(n) for n in args.size] if args.size else list(spec.sizes)
        where = str(spec.path)
        kernel = find_kernel(read_cuda(spec.cuda_path, f"{where}: port.cuda"), spec.cuda.kernel, f"{where}: cuda.kernel")
        spec.cuda.kernel = kernel.name
        plans = _plans(spec, sizes, kernel, where)
    except SpecError as exc:
        raise UsageError(str(exc)) from None
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    name_expr = spec.cuda.name_expression(kernel.name)
    options = spec.cuda.compile_options()
    if args.dry_run:
        arch = args.arch or spec.cuda.arch or DEFAULT_ARCH
        prefer = None if args.compiler == "auto" else args.compiler
        comp = compile_kernel(spec.cuda_path, name_expr, options, arch, template=bool(spec.cuda.template), prefer=prefer)
        return _report_dry(spec, plans, comp, _output_problems(spec, sizes, plans), args)
    return _capture(spec, sizes, name_expr, options, args)


def _reference_shapes(spec) -> list[tuple[int, ...]] | None:
    """Output shapes of the reference on the first size (run in its sandboxed child), for --init."""
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..numerics.golden_capture import size_inputs
    from ..numerics.reference import run_reference

    if not spec.reference_function:
        return None
    size = spec.sizes[0]
    ref = run_reference(spec, list(size_inputs(spec, size).values()), size_name=size.name, timeout_s=60, memory_mb=4096)
    return [tuple(o.shape) for o in ref.outputs] if ref.ok else None


def _output_problems(spec, sizes, plans) -> list[str]:
    """The planned outputs against the reference's outputs on each size (count and shape, in the
    reference's layout): a wrong [cuda] output would make every golden 'not compared'."""
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    import numpy as np

    from ..numerics.golden_capture import size_inputs
    from ..numerics.reference import run_reference

    if not spec.reference_function:
        return []
    problems = []
    for size, p in zip(sizes, plans):
        ref = run_reference(spec, list(size_inputs(spec, size).values()), size_name=size.name, timeout_s=120,
                            memory_mb=4096)
        if not ref.ok:
            problems.append(f"size {size.name!r}: the reference did not run ({ref.status}); outputs not checked")
            continue
        outs = p.outputs
        if len(outs) != len(ref.outputs):
            problems.append(f"size {size.name!r}: [cuda] declares {len(outs)} output(s), the reference returns "
                            f"{len(ref.outputs)}")
        for a, r in zip(outs, ref.outputs):
            shape = tuple(a.shape[i] for i in np.argsort(a.transpose)) if a.transpose else a.shape
            if tuple(shape) != tuple(r.shape):
                problems.append(f"size {size.name!r}: output {a.output} is {list(shape)} in the reference's layout, "
                                f"the reference returns {list(r.shape)}")
    return problems


def _report_dry(spec, plans, comp, problems, args) -> int:
    ok = (comp.ok or comp.compiler == "none") and not problems
    if args.format == "json":
        doc = {"schema": SCHEMA, "spec": str(spec.path), "dry_run": True, "kernel": spec.cuda.kernel,
               "plans": [p.to_json() for p in plans], "compile": comp.to_json(), "ok": ok,
               "compiled": comp.ok, "problems": problems}
        json.dump(doc, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        w = sys.stdout.write
        w(f"golden --dry-run {spec.path}: kernel {spec.cuda.kernel}\n")
        for prob in problems:
            w(f"  PROBLEM: {prob}\n")
        for p in plans:
            w(f"  size {p.size}: grid {list(p.grid)} block {list(p.block)} shared {p.shared_bytes} B; "
              + ", ".join(_arg_text(a) for a in p.args) + "\n")
        if comp.ok:
            w(f"  compiled with {comp.compiler} for {comp.arch}: {len(comp.image or b''):,} bytes of cubin "
              f"(options: {' '.join(comp.options)})\n")
        elif comp.compiler == "none":
            w(f"  not compiled: {comp.log} (install nvcc or pip install 'nki-assist[gpu]' for NVRTC)\n")
        else:
            w(f"  compile FAILED with {comp.compiler} for {comp.arch}:\n{comp.log}\n")
    return EXIT_OK if ok else EXIT_ERROR


def _arg_text(a) -> str:
    if a.kind == "scalar":
        v = a.value.item() if hasattr(a.value, "item") else a.value
        return f"{a.label}={v} ({a.value.dtype.name})"
    t = " transposed" if a.transpose else ""
    return f"{a.label}{t} {a.dtype.name}{list(a.shape)}" + (" zero-filled" if a.fill == "zeros" and a.kind == "output" else "")


def _capture(spec, sizes, name_expr: str, options: list[str], args) -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..numerics.cuda_compile import compile_kernel
    from ..numerics.golden_capture import capture_size, write_capture
    from ..numerics.gpu_launch import NoGpu

    try:
        launcher = _launcher()
    except NoGpu as exc:
        raise UsageError(str(exc)) from None
    device = launcher.device()
    arch = launcher.arch() if hasattr(launcher, "arch") else (spec.cuda.arch or "sm_80")
    comp = compile_kernel(spec.cuda_path, name_expr, options, arch, template=bool(spec.cuda.template),
                          prefer=getattr(launcher, "compiler", None))
    if not comp.ok:
        raise UsageError(f"{spec.cuda_path}: compile failed with {comp.compiler} for {arch}:\n{comp.log}")
    handle = launcher.load(comp, spec.cuda.kernel)
    caps = []
    for size in sizes:
        try:
            caps.append(capture_size(spec, size, launcher, handle))
        except Exception as exc:  # a launch that fails (bad grid, illegal address) is reported, not a traceback
            raise UsageError(f"size {size.name!r}: the launch failed on {device.get('name')}: "
                             f"{type(exc).__name__}: {exc}") from None
    out_dir = _out_dir(spec, args.out)
    record = write_capture(spec, out_dir, caps, device=device, compiled=comp, launcher=launcher.name)
    added = _link_spec(spec, out_dir)
    rows = [_row(spec, c) for c in caps]
    if args.format == "json":
        json.dump({"schema": SCHEMA, "spec": str(spec.path), "record": str(record), "device": device,
                   "compiler": comp.compiler, "sizes": rows, "spec_updated": added}, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        w = sys.stdout.write
        w(f"captured {len(caps)} size(s) of {spec.cuda.kernel} on {device.get('name')} (driver {device.get('driver')}, "
          f"CUDA {device.get('cuda')}) with {comp.compiler} for {arch}\n")
        for r in rows:
            w(f"  size {r['size']}: " + "; ".join(
                f"output {o['output']} {o['dtype']}{o['shape']}: unwritten {o['unwritten']}, run-to-run "
                f"{o['identical']}/{o['written']} identical (max abs {o['spread_abs']:.3g}), vs reference "
                + (f"max abs {o['vs_reference_abs']:.3g}" if o["vs_reference_abs"] is not None else "not compared")
                for o in r["outputs"]) + "\n")
        w(f"wrote {record} and the npz pairs beside it\n")
        if added:
            w(f"added [golden] dir = \"{added}\" to {spec.path}\n")
    return EXIT_OK


def _row(spec, cap) -> dict[str, Any]:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    import numpy as np

    from ..numerics.reference import run_reference

    ref = run_reference(spec, list(cap.inputs.values()), size_name=cap.size, timeout_s=120, memory_mb=4096) \
        if spec.reference_function else None
    outs = []
    for i, (g, m) in enumerate(zip(cap.outputs, cap.meta)):
        vs = None
        if ref is not None and ref.ok and i < len(ref.outputs) and np.shape(ref.outputs[i]) == g.shape:
            d = np.abs(g - np.asarray(ref.outputs[i], dtype=np.float64))
            vs = float(np.nanmax(d)) if np.isfinite(d).any() else float("nan")
        rr = m["run_to_run"]
        outs.append({"output": i, "dtype": m["dtype"], "shape": m["shape"], "unwritten": m["unwritten"],
                     "identical": rr["identical"], "written": rr["written"], "spread_abs": rr["max_abs"],
                     "vs_reference_abs": vs})
    return {"size": cap.size, "grid": list(cap.plan.grid), "block": list(cap.plan.block),
            "seconds": round(cap.seconds, 4), "outputs": outs}


def _out_dir(spec, out: str | None) -> Path:
    if out:
        return Path(out)
    if spec.golden is not None and spec.golden.dir:
        return spec.dir / spec.golden.dir
    return spec.dir / "golden"


def _link_spec(spec, out_dir: Path) -> str | None:
    """Append `[golden] dir = ...` to a spec that has no [golden] yet; the relative dir, or None."""
    if spec.golden is not None:
        return None
    try:
        rel = os.path.relpath(out_dir.resolve(), spec.dir.resolve())
    except ValueError:
        return None
    rel = rel.replace(os.sep, "/")
    text = spec.path.read_text(encoding="utf-8")
    sep = "" if text.endswith("\n") else "\n"
    spec.path.write_text(text + f"{sep}\n# Captured CUDA outputs (nki-assist golden)\n[golden]\ndir = \"{rel}\"\n",
                         encoding="utf-8")
    return rel
