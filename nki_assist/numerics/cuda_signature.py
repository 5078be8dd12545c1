"""The [cuda] section against the CUDA source: check the argument list, or propose a section.

`check_signature` compares a launch plan with the kernel's parameters (count, pointer or scalar,
element type, C scalar type, const outputs); `propose` writes a `[cuda]` section from the kernel's
signature and the file's launcher (`nki-assist golden --init`), marking what it guessed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ..parse.cuda import parse_cuda
from ..parse.cuda_model import CudaFile, CudaKernel, canonical_dtype
from .cuda_launch import POINTEE_DTYPES, SCALAR_TYPES, LaunchPlan
from .errors import SpecError

MAX_CUDA_BYTES = 4_000_000


def read_cuda(path: Path, where: str) -> CudaFile:
    try:
        if path.stat().st_size > MAX_CUDA_BYTES:
            raise SpecError(f"{where}: {path} is over {MAX_CUDA_BYTES:,} bytes")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{where}: cannot read {path}: {exc}") from None
    return parse_cuda(text, str(path))


def find_kernel(cf: CudaFile, name: str | None, where: str) -> CudaKernel:
    glob = cf.global_kernels
    if name:
        k = next((k for k in glob if k.name == name), None)
        if k is None:
            raise SpecError(f"{where}: no __global__ kernel {name!r} in {cf.path} "
                            f"(found: {', '.join(k.name for k in glob) or 'none'})")
        return k
    if len(glob) != 1:
        raise SpecError(f"{where}: cannot tell which kernel to launch in {cf.path} "
                        f"({', '.join(k.name for k in glob) or 'no __global__ kernel'}); set cuda.kernel")
    return glob[0]


def check_signature(p: LaunchPlan, kernel: CudaKernel, where: str) -> list[str]:
    """Problems of the planned arguments against the kernel's parameters (empty: they fit)."""
    problems = []
    params = kernel.params
    if len(p.args) != len(params):
        return [f"{where}: cuda.args: {len(p.args)} argument(s) for {kernel.name}'s {len(params)} parameters "
                f"({', '.join(q.name for q in params)})"]
    templated = set(kernel.template_params)
    for a, q in zip(p.args, params):
        key = f"{where}: cuda.args[{a.index}] ({a.label} -> parameter {q.name!r})"
        if a.kind in ("input", "output") and not q.is_pointer:
            problems.append(f"{key}: the parameter is a {q.type} scalar, the spec passes an array")
            continue
        if a.kind == "scalar" and q.is_pointer:
            problems.append(f"{key}: the parameter is a {q.type}* pointer, the spec passes a scalar")
            continue
        if q.type in templated:
            continue  # its type comes from cuda.template
        if a.kind == "output" and q.is_const:
            problems.append(f"{key}: the parameter is const {q.type}*; the kernel cannot write an output there")
        if a.kind in ("input", "output"):
            want = POINTEE_DTYPES.get(canonical_dtype(q.type) or "")
            if want is not None and a.dtype is not None and np.dtype(a.dtype).name != want:
                problems.append(f"{key}: the kernel reads {q.type}* ({want}), the spec passes {a.dtype.name}; "
                                f"set dtype = \"{want}\"")
        else:
            want_t = SCALAR_TYPES.get(q.type)
            if want_t is not None and np.dtype(want_t) != np.asarray(a.value).dtype:
                problems.append(f"{key}: the parameter is {q.type} ({np.dtype(want_t).name}), the spec passes "
                                f"{np.asarray(a.value).dtype.name}; set type = \"{q.type}\"")
    return problems


# --- --init -------------------------------------------------------------------------------------

def _symbol_for(name: str, symbols: list[str]) -> tuple[str | None, bool]:
    """(size symbol, guessed) for a CUDA parameter name: exact, case-insensitive, or first letter."""
    if name in symbols:
        return name, False
    low = [s for s in symbols if s.lower() == name.lower()]
    if len(low) == 1:
        return low[0], False
    first = [s for s in symbols if s[:1].lower() == name[:1].lower()]
    if len(first) == 1:
        return first[0], True
    return None, True


def _c_expr(text: str, defines: dict[str, Any], rename: dict[str, str]) -> str:
    """A launcher dimension in sizeexpr syntax: #defines folded, C's integer `/` as `//`, names mapped."""
    def sub(m: re.Match) -> str:
        w = m.group(0)
        if w in defines:
            return str(defines[w])
        return rename.get(w, w)

    out = re.sub(r"\b[A-Za-z_]\w*\b", sub, text)
    out = re.sub(r"(?<![/])/(?![/])", "//", out)
    return re.sub(r"\s+", " ", out).strip()


def _q(v: Any) -> str:
    return f'"{v}"' if isinstance(v, str) else str(v)


def propose(spec, output_shapes: list[tuple[int, ...]] | None = None) -> str:
    """A [cuda] section for `spec` (TOML text with comments on what was guessed)."""
    where = f"{spec.path}: port.cuda"
    if spec.cuda_path is None:
        raise SpecError(f"{spec.path}: port.cuda: the spec names no CUDA file")
    cf = read_cuda(spec.cuda_path, where)
    k = find_kernel(cf, spec.port.cuda_kernel, where)
    symbols = sorted({s for sz in spec.sizes for s in sz.bindings})
    first = spec.sizes[0]
    arrays = [n for n, s in spec.inputs.items() if not s.is_value]
    values = [n for n, s in spec.inputs.items() if s.is_value]
    lines = ["[cuda]", f'kernel = "{k.name}"']
    rename: dict[str, str] = {}
    for q in k.params:
        if not q.is_pointer:
            sym, _ = _symbol_for(q.name, symbols)
            if sym:
                rename[q.name] = sym
    launch = next((la for la in cf.launches if la.kernel == k.name), None)
    if launch is not None and launch.grid_dims:
        grid = [_q(d if isinstance(d, int) else _c_expr(str(d), cf.defines, rename)) for d in launch.grid_dims]
        block = [_q(d if isinstance(d, int) else _c_expr(str(d), cf.defines, rename)) for d in launch.block_dims]
        lines.append(f"grid = [{', '.join(grid)}]  # from the launcher at line {launch.line}: check the names")
        lines.append(f"block = [{', '.join(block) or '256'}]")
        if launch.smem_bytes:
            lines.append(f"shared_bytes = {launch.smem_bytes}")
    else:
        lines.append('grid = ["TODO"]  # no launcher in the file: one block per what? (e.g. "cdiv(N, 256)")')
        lines.append(f"block = [{k.launch_bounds or 256}]  # TODO: the block the kernel's indexing assumes")
    if k.template_params:
        lines.append(f"template = [{', '.join(_q('TODO') for _ in k.template_params)}]  "
                     f"# {', '.join(k.template_params)}")
    lines.append("args = [")
    pool = list(arrays)
    out_i = 0
    for q in k.params:
        dt = POINTEE_DTYPES.get(canonical_dtype(q.type) or "")
        if q.is_pointer and not q.is_const and out_i < len(output_shapes or [0]):
            shape = None
            if output_shapes and out_i < len(output_shapes):
                shape = [next((s for s in symbols if first.bindings[s] == d), d) for d in output_shapes[out_i]]
            shape_s = ", ".join(_q(d) for d in shape) if shape else '"TODO"'
            lines.append(f'  {{ output = {out_i}, shape = [{shape_s}], dtype = "{dt or "float32"}" }},  # {q.name}')
            out_i += 1
        elif q.is_pointer:
            name = next((n for n in pool if n.lower() == q.name.lower()), pool[0] if pool else "TODO")
            guess = name.lower() != q.name.lower()
            if name in pool:
                pool.remove(name)
            cast = ""
            if name in spec.inputs and dt and spec.inputs[name].np_dtype.name != dt:
                cast = f', dtype = "{dt}"'
            note = f"  # {q.name}" + (": guessed by position; check layout (transpose = true?)" if guess else "")
            lines.append(f'  {{ input = "{name}"{cast} }},{note}')
        else:
            sym = rename.get(q.name) or next((v for v in values if v.lower() == q.name.lower()), None)
            guessed = sym is None or _symbol_for(q.name, symbols)[1] and sym not in values
            lines.append(f'  {{ scalar = "{sym or "TODO"}", type = "{q.type if q.type in SCALAR_TYPES else "int"}" }},'
                         + (f"  # {q.name}" + (": guessed" if guessed else "")))
    lines.append("]")
    return "\n".join(lines) + "\n"
