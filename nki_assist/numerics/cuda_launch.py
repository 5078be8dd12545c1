"""The port spec's `[cuda]` section: how to launch the CUDA kernel on the inputs `review` generates.

```toml
[cuda]
kernel = "sgemm_bias_relu"             # default: port.cuda_kernel, else the file's only __global__
grid = ["cdiv(N, 64)", "cdiv(M, 64)"]  # 1-3 expressions over the size symbols (sizeexpr.py)
block = [16, 16]
shared_bytes = 0                       # dynamic shared memory (an expression too)
defines = { TILE = 64 }                # -DTILE=64
template = []                          # template arguments: kernel<...>
flags = []                             # extra compile flags (an allow-list: -O3, -lineinfo, ...)
args = [                               # the CUDA parameters, in order
  { input = "lhsT", transpose = true, dtype = "float32" },   # A = lhsT.T, bf16 widened to float*
  { input = "rhs", dtype = "float32" },
  { input = "bias", dtype = "float32" },
  { output = 0, shape = ["M", "N"], dtype = "float32" },      # the reference's output 0
  { scalar = "M", type = "int" }, { scalar = "N", type = "int" }, { scalar = "K", type = "int" },
]
```

`load_spec` validates the section against the inputs and every size (`check_launch`); `plan` turns it
into the buffers and scalars of one size. Nothing here compiles or needs a GPU.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

import ml_dtypes
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .errors import SpecError
from .sizeexpr import ExprError, evaluate, evaluate_int, names, parse

Dim = int | str

# Device element types a buffer may have -> NumPy / ml_dtypes, and the CUDA spelling of each.
DEVICE_DTYPES: dict[str, Any] = {
    "float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
    "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
    "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64, "bool": np.bool_,
}
_DTYPE_ALIASES = {"fp32": "float32", "float": "float32", "fp16": "float16", "half": "float16",
                  "bf16": "bfloat16", "double": "float64", "int": "int32"}
# C scalar types of kernel parameters -> NumPy scalar type (LP64: long is 64 bits).
SCALAR_TYPES: dict[str, Any] = {
    "int": np.int32, "int32_t": np.int32, "unsigned": np.uint32, "unsigned int": np.uint32,
    "uint32_t": np.uint32, "long": np.int64, "long long": np.int64, "int64_t": np.int64,
    "size_t": np.uint64, "unsigned long": np.uint64, "uint64_t": np.uint64,
    "float": np.float32, "double": np.float64, "bool": np.bool_, "short": np.int16, "char": np.int8,
}
# Pointer element type in the CUDA source (canonical, cuda_model.canonical_dtype) -> device dtype.
POINTEE_DTYPES = {
    "float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
    "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2", "int": "int32", "int32_t": "int32",
    "unsigned": "uint32", "unsigned int": "uint32", "uint32_t": "uint32", "long": "int64",
    "int64_t": "int64", "long long": "int64", "char": "int8", "signed char": "int8", "int8_t": "int8",
    "unsigned char": "uint8", "uint8_t": "uint8", "short": "int16", "int16_t": "int16",
    "unsigned short": "uint16", "uint16_t": "uint16", "bool": "bool",
}
# Flags that change code generation or diagnostics, never where files go or what runs.
_FLAG = re.compile(r"^(-O[0-3]|-lineinfo|-G|--?use_fast_math|--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)"
                   r"|--?std=c\+\+(14|17|20)|--?maxrregcount=\d{1,3}|--?extra-device-vectorization"
                   r"|--?restrict|-Xptxas=-v|--?dopt=(on|off))$")
_DEFINE_VALUE = re.compile(r"^[A-Za-z0-9_.+\-*/() ]{1,100}$")
_TEMPLATE_ARG = re.compile(r"^[A-Za-z0-9_:<>, .+\-*/()]{1,100}$")
_ARCH = re.compile(r"^sm_\d{2,3}[a-z]?$")
MAX_BLOCK = 1024
GRID_LIMITS = (2**31 - 1, 65_535, 65_535)
BLOCK_LIMITS = (1024, 1024, 64)
MAX_SHARED_BYTES = 232_448  # 227 KiB: the opt-in maximum per block on sm_90 (CUDA C++ Guide, table 21)


def device_dtype(name: str) -> np.dtype:
    key = _DTYPE_ALIASES.get(name, name)
    if key not in DEVICE_DTYPES:
        raise KeyError(name)
    return np.dtype(DEVICE_DTYPES[key])


class CudaArg(BaseModel):
    """One CUDA kernel parameter: an input array, an output buffer, or a scalar."""

    model_config = ConfigDict(extra="forbid")
    input: str | None = None  # name of an array in [inputs]
    output: int | None = None  # index of the reference's / kernel's output this buffer becomes
    scalar: int | float | str | None = None  # an expression over the size symbols and scalar inputs
    transpose: bool | list[int] = False  # input: reverse the last two axes (true) or permute; output: undo it
    dtype: str | None = None  # device element type (default: the input's dtype; required for outputs)
    type: str | None = None  # C type of a scalar (int, long, float, ...)
    shape: list[Dim] | None = None  # output shape as the kernel writes it
    fill: Literal["poison", "zeros"] = "poison"  # output: poison (find unwritten elements) or zero-filled

    @model_validator(mode="after")
    def _one_kind(self) -> "CudaArg":
        kinds = [k for k in ("input", "output", "scalar") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("give exactly one of `input`, `output` or `scalar`"
                             + (f" (got {', '.join(kinds)})" if kinds else ""))
        kind = kinds[0]
        if isinstance(self.scalar, bool):
            raise ValueError("scalar must be a number or an expression string")
        if kind == "scalar":
            if self.type is None:
                raise ValueError(f"a scalar needs `type` (one of {', '.join(SCALAR_TYPES)})")
            if self.type not in SCALAR_TYPES:
                raise ValueError(f"unknown scalar type {self.type!r}; known: {', '.join(SCALAR_TYPES)}")
            for key in ("dtype", "shape"):
                if getattr(self, key) is not None:
                    raise ValueError(f"`{key}` belongs to arrays, not to a scalar")
            if self.transpose:
                raise ValueError("`transpose` belongs to arrays, not to a scalar")
            if isinstance(self.scalar, str):
                try:
                    parse(self.scalar)
                except ExprError as exc:
                    raise ValueError(f"scalar: {exc}") from None
            return self
        if self.type is not None:
            raise ValueError("`type` is for scalars; arrays take `dtype`")
        if self.dtype is not None:
            try:
                device_dtype(self.dtype)
            except KeyError:
                raise ValueError(f"unknown dtype {self.dtype!r}; known: {', '.join(DEVICE_DTYPES)}") from None
        if kind == "output":
            if self.output < 0:
                raise ValueError("output must be an index >= 0")
            if self.shape is None or not self.shape:
                raise ValueError("an output needs `shape` (its dimensions as the kernel writes them)")
            if self.dtype is None:
                raise ValueError("an output needs `dtype` (the element type the kernel stores)")
            for i, d in enumerate(self.shape):
                if isinstance(d, bool):
                    raise ValueError(f"shape[{i}] is a boolean")
                if isinstance(d, str):
                    try:
                        parse(d)
                    except ExprError as exc:
                        raise ValueError(f"shape[{i}]: {exc}") from None
        else:
            if self.shape is not None:
                raise ValueError("an input's shape comes from [inputs]; remove `shape`")
            if self.fill != "poison":
                raise ValueError("`fill` belongs to outputs")
        return self

    @property
    def kind(self) -> str:
        return "input" if self.input is not None else "output" if self.output is not None else "scalar"


class CudaLaunch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kernel: str | None = None
    grid: list[Dim] = Field(min_length=1, max_length=3)
    block: list[Dim] = Field(min_length=1, max_length=3)
    shared_bytes: Dim = 0
    defines: dict[str, int | float | str] = Field(default_factory=dict)
    template: list[str] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)
    arch: str | None = None  # compile target when no GPU says which (--dry-run); default sm_80
    args: list[CudaArg] = Field(default_factory=list)

    @field_validator("grid", "block")
    @classmethod
    def _dims(cls, v: list[Dim]) -> list[Dim]:
        for i, d in enumerate(v):
            if isinstance(d, bool):
                raise ValueError(f"[{i}] is a boolean; give an int or an expression")
            if isinstance(d, str):
                try:
                    parse(d)
                except ExprError as exc:
                    raise ValueError(f"[{i}]: {exc}") from None
            elif d < 1:
                raise ValueError(f"[{i}] is {d}; launch dimensions are >= 1")
        return v

    @field_validator("shared_bytes")
    @classmethod
    def _shared(cls, v: Dim) -> Dim:
        if isinstance(v, bool):
            raise ValueError("give an int or an expression")
        if isinstance(v, str):
            try:
                parse(v)
            except ExprError as exc:
                raise ValueError(str(exc)) from None
        elif v < 0:
            raise ValueError("must be >= 0")
        return v

    @field_validator("defines")
    @classmethod
    def _defines(cls, v: dict[str, Any]) -> dict[str, Any]:
        for name, val in v.items():
            if not name.isidentifier() or not name.isascii():
                raise ValueError(f"{name!r} is not a macro name")
            if isinstance(val, bool) or (isinstance(val, str) and not _DEFINE_VALUE.match(val)):
                raise ValueError(f"{name} = {val!r}: a define is a number or a plain expression "
                                 "(letters, digits, + - * / ( ) .)")
        return v

    @field_validator("template")
    @classmethod
    def _template(cls, v: list[str]) -> list[str]:
        for i, t in enumerate(v):
            if not _TEMPLATE_ARG.match(t):
                raise ValueError(f"[{i}] {t!r} is not a type or constant template argument")
        return v

    @field_validator("flags")
    @classmethod
    def _flags(cls, v: list[str]) -> list[str]:
        for i, f in enumerate(v):
            if not _FLAG.match(f):
                raise ValueError(f"[{i}] {f!r} is not an allowed flag (code-generation flags such as -O3, "
                                 "-lineinfo, -ftz=true, -use_fast_math, -std=c++17, -maxrregcount=N; "
                                 "macros go in `defines`)")
        return v

    @field_validator("arch")
    @classmethod
    def _arch(cls, v: str | None) -> str | None:
        if v is not None and not _ARCH.match(v):
            raise ValueError(f"{v!r} is not an architecture like sm_90")
        return v

    @property
    def outputs(self) -> list[tuple[int, CudaArg]]:
        """(parameter position, arg) of every output, in output-index order."""
        return sorted(((i, a) for i, a in enumerate(self.args) if a.kind == "output"), key=lambda p: p[1].output)

    def compile_options(self) -> list[str]:
        """NVRTC/nvcc options: nvcc's default math (CuPy's NVRTC default -ftz=true changes results),
        then the spec's defines and flags (a flag of the spec wins over the default)."""
        given = {f.lstrip("-").split("=")[0] for f in self.flags}
        opts = [f"-{k}=true" if k != "ftz" else "-ftz=false" for k in ("ftz", "prec-div", "prec-sqrt", "fmad")
                if k not in given and not ("use_fast_math" in given)]
        opts += [f"-D{k}={v}" for k, v in self.defines.items()]
        return opts + list(self.flags)

    def name_expression(self, kernel: str) -> str:
        return f"{kernel}<{', '.join(self.template)}>" if self.template else kernel


@dataclass
class PlannedArg:
    """One parameter of one size: what to put in it."""

    index: int  # parameter position
    kind: str  # input | output | scalar
    label: str  # input name, `output 0`, or the scalar expression
    dtype: np.dtype | None = None  # device element type (arrays)
    shape: tuple[int, ...] = ()  # device shape (arrays)
    transpose: tuple[int, ...] | None = None  # axes permutation applied (input) or undone (output)
    value: Any = None  # scalar value (NumPy scalar of the C type)
    fill: str = "poison"
    output: int | None = None


@dataclass
class LaunchPlan:
    size: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    args: list[PlannedArg] = field(default_factory=list)

    @property
    def outputs(self) -> list[PlannedArg]:
        return sorted((a for a in self.args if a.kind == "output"), key=lambda a: a.output)

    def to_json(self) -> dict[str, Any]:
        return {"size": self.size, "kernel": self.kernel, "grid": list(self.grid), "block": list(self.block),
                "shared_bytes": self.shared_bytes,
                "args": [{"index": a.index, "kind": a.kind, "label": a.label,
                          "dtype": a.dtype.name if a.dtype is not None else None, "shape": list(a.shape),
                          "transpose": list(a.transpose) if a.transpose else None,
                          "value": a.value.item() if hasattr(a.value, "item") else a.value,
                          "fill": a.fill if a.kind == "output" else None} for a in self.args]}


def _perm(t: bool | list[int], rank: int) -> tuple[int, ...] | None:
    if t is False or t == []:
        return None
    if t is True:
        if rank < 2:
            raise ValueError(f"transpose = true needs 2 or more dimensions; this array has {rank}")
        return (*range(rank - 2), rank - 1, rank - 2)
    if sorted(t) != list(range(rank)):
        raise ValueError(f"transpose {t} is not a permutation of the {rank} axes")
    return tuple(t)


def scalar_env(inputs: dict[str, Any], bindings: dict[str, int]) -> dict[str, int | float]:
    """Symbols a scalar or shape expression may read: the size's bindings and numeric scalar inputs."""
    env: dict[str, int | float] = {}
    for name, spec in inputs.items():
        if spec.is_value and isinstance(spec.value, (int, float)) and not isinstance(spec.value, bool):
            env[name] = spec.value
    env.update(bindings)
    return env


def plan(launch: CudaLaunch, kernel: str, inputs: dict[str, Any], size, shape_of, where: str) -> LaunchPlan:
    """The launch of one size: dimensions, buffers and scalars; SpecError naming the key otherwise.

    `inputs` are the spec's InputSpecs, `shape_of(name, size)` their shapes for the size."""
    env = scalar_env(inputs, size.bindings)

    def at(key: str, exc: Exception) -> SpecError:
        return SpecError(f"{where}: cuda.{key}: {exc} (size {size.name!r})")

    def dims(key: str, values: list[Dim], limits: tuple[int, ...]) -> tuple[int, int, int]:
        out = []
        for i, d in enumerate(values):
            try:
                v = evaluate_int(d, env)
            except ExprError as exc:
                raise at(f"{key}[{i}]", exc) from None
            if not 1 <= v <= limits[i]:
                raise at(f"{key}[{i}]", f"{d!r} = {v}, outside 1..{limits[i]:,}")
            out.append(v)
        return tuple(out + [1] * (3 - len(out)))  # type: ignore[return-value]

    grid = dims("grid", launch.grid, GRID_LIMITS)
    block = dims("block", launch.block, BLOCK_LIMITS)
    if math.prod(block) > MAX_BLOCK:
        raise at("block", f"{math.prod(block)} threads per block; at most {MAX_BLOCK}")
    try:
        shared = evaluate_int(launch.shared_bytes, env)
    except ExprError as exc:
        raise at("shared_bytes", exc) from None
    if not 0 <= shared <= MAX_SHARED_BYTES:
        raise at("shared_bytes", f"{shared:,} bytes, outside 0..{MAX_SHARED_BYTES:,}")
    out = LaunchPlan(size.name, kernel, grid, block, shared)
    for i, a in enumerate(launch.args):
        key = f"args[{i}]"
        if a.kind == "input":
            spec = inputs[a.input]
            shape = tuple(shape_of(a.input, size))
            try:
                perm = _perm(a.transpose, len(shape))
            except ValueError as exc:
                raise at(f"{key}.transpose", exc) from None
            dshape = tuple(shape[p] for p in perm) if perm else shape
            dt = device_dtype(a.dtype) if a.dtype else np.dtype(spec.np_dtype)
            out.args.append(PlannedArg(i, "input", a.input, dt, dshape, perm))
        elif a.kind == "output":
            shape = []
            for j, d in enumerate(a.shape or []):
                try:
                    v = evaluate_int(d, env)
                except ExprError as exc:
                    raise at(f"{key}.shape[{j}]", exc) from None
                if v < 1:
                    raise at(f"{key}.shape[{j}]", f"{d!r} = {v}; dimensions are >= 1")
                shape.append(v)
            try:
                perm = _perm(a.transpose, len(shape))
            except ValueError as exc:
                raise at(f"{key}.transpose", exc) from None
            out.args.append(PlannedArg(i, "output", f"output {a.output}", device_dtype(a.dtype), tuple(shape),
                                       perm, fill=a.fill, output=a.output))
        else:
            try:
                v = evaluate(a.scalar, env)
            except ExprError as exc:
                raise at(f"{key}.scalar", exc) from None
            ctype = np.dtype(SCALAR_TYPES[a.type])
            if ctype.kind in "iub":
                if isinstance(v, float) and not v.is_integer():
                    raise at(f"{key}.scalar", f"{a.scalar!r} = {v:g} is not a whole number for a {a.type}")
                info = np.iinfo(ctype) if ctype.kind != "b" else None
                if info is not None and not info.min <= int(v) <= info.max:
                    raise at(f"{key}.scalar", f"{a.scalar!r} = {int(v)} does not fit a {a.type}")
                value = ctype.type(int(v))
            else:
                value = ctype.type(v)
            out.args.append(PlannedArg(i, "scalar", str(a.scalar), value=value))
    return out


def check_launch(launch: CudaLaunch, where: str, inputs: dict[str, Any], sizes: list, shape_of) -> None:
    """Validate the section against [inputs] and every size (load_spec calls it); SpecError otherwise."""
    seen_outputs: dict[int, int] = {}
    for i, a in enumerate(launch.args):
        key = f"{where}: cuda.args[{i}]"
        if a.kind == "input":
            if a.input not in inputs:
                raise SpecError(f"{key}.input: no input {a.input!r} in [inputs] ({', '.join(inputs) or 'none'})")
            if inputs[a.input].is_value:
                raise SpecError(f"{key}.input: {a.input!r} is a scalar input; pass it as {{ scalar = "
                                f"\"{a.input}\", type = ... }}")
        elif a.kind == "output":
            if a.output in seen_outputs:
                raise SpecError(f"{key}.output: output {a.output} is already args[{seen_outputs[a.output]}]")
            seen_outputs[a.output] = i
        elif isinstance(a.scalar, str):
            known = set(scalar_env(inputs, {})) | {s for sz in sizes for s in sz.bindings}
            unknown = names(a.scalar) - known
            if unknown:
                raise SpecError(f"{key}.scalar: unknown symbol(s) {', '.join(sorted(unknown))} (size symbols and "
                                f"numeric scalar inputs: {', '.join(sorted(known)) or 'none'})")
    if sorted(seen_outputs) != list(range(len(seen_outputs))):
        raise SpecError(f"{where}: cuda.args: outputs are numbered {sorted(seen_outputs)}; number them 0, 1, ... "
                        "in the reference's output order")
    if not seen_outputs:
        raise SpecError(f"{where}: cuda.args: no output buffer; add {{ output = 0, shape = [...], dtype = ... }}")
    for size in sizes:
        plan(launch, launch.kernel or "kernel", inputs, size, shape_of, where)
