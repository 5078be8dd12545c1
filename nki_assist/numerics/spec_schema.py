"""The sections of a port spec (`port.toml`) as pydantic models: [port], [review], [inputs], [[sizes]],
[tolerance], [golden] (and [cuda], cuda_launch.py), with the dtypes a spec may declare. Each model
validates its own fields; `spec.load_spec` reads the file and checks what spans sections."""

from __future__ import annotations

import json
from typing import Any, Literal

import ml_dtypes
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, field_validator, model_validator

from ..api.hardware import TARGETS
from .cuda_launch import CudaLaunch

Dist = Literal["normal", "uniform", "randint", "ones", "zeros"]


# Storage dtypes a spec may declare (NKI names; nki.api.shared.rst data types) -> NumPy / ml_dtypes.
DTYPES: dict[str, Any] = {
    "float64": np.float64,
    "float32": np.float32,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3": ml_dtypes.float8_e4m3,  # Neuron legacy e4m3, max 240
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,  # OCP, max 448
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "int64": np.int64,
    "int32": np.int32,
    "int16": np.int16,
    "int8": np.int8,
    "uint32": np.uint32,
    "uint16": np.uint16,
    "uint8": np.uint8,
    "bool": np.bool_,
    "bool_": np.bool_,
}


MAX_SPEC_BYTES = 1_000_000


MAX_SOURCE_BYTES = 20_000_000  # kernel and reference files are read (for arities) before anything runs


MAX_GRID = 65_536


_ALIASES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "half": "float16", "float": "float32"}


def resolve_dtype(name: str) -> np.dtype:
    key = _ALIASES.get(name, name)
    if key not in DTYPES:
        raise KeyError(name)
    return np.dtype(DTYPES[key])


def dtype_name(dtype: Any) -> str:
    """Canonical spec name of a NumPy / ml_dtypes dtype ("bfloat16", "float32", ...)."""
    return np.dtype(dtype).name


class PortSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    cuda: str | None = None
    cuda_kernel: str | None = None
    nki: str
    nki_kernel: str | None = None
    reference: str | None = None  # "file.py:function"
    target: str = "trn2"
    grid: list[int] | None = None  # legacy launch grid kernel[grid]
    package_root: str | None = None  # folder holding the kernel's top-level package (default: from __init__.py)

    @field_validator("target")
    @classmethod
    def _target(cls, v: str) -> str:
        if v not in TARGETS:
            raise ValueError(f"unknown target {v!r}; choose one of {', '.join(TARGETS)}")
        return v

    @field_validator("reference")
    @classmethod
    def _reference(cls, v: str | None) -> str | None:
        if v is not None and (v.count(":") != 1 or not all(p.strip() for p in v.split(":"))):
            raise ValueError(f"{v!r} is not of the form \"file.py:function\"")
        return v

    @field_validator("grid")
    @classmethod
    def _grid(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and (not v or any(g < 1 or g > MAX_GRID for g in v)):
            raise ValueError(f"grid must be a non-empty list of ints from 1 to {MAX_GRID}")
        return v


class InputSpec(BaseModel):
    """One kernel argument: a generated array (`shape`, `dtype`, ...), a plain value (`value`), an enum member
    (`enum = "ActFnType.SiLU"`), an NKI dtype (`dtype` alone), a config object (`call` + `kwargs`) or a literal
    array (`array` + `dtype`). `keyword = true` passes it by name; `output = true` marks an array the kernel
    writes into (its contents after the call are compared, in [inputs] order, instead of the return value)."""

    model_config = ConfigDict(extra="forbid")
    keyword: bool = False
    output: bool = False
    enum: str | None = None
    call: str | None = None
    kwargs: dict[str, Any] | None = None
    array: list | None = None
    shape: list[int | str] | None = None
    dtype: str | None = None  # required for arrays (checked below: a silent float32 hides port bugs)
    dist: Dist = "normal"
    mean: FiniteFloat = 0.0
    scale: FiniteFloat = 1.0
    low: FiniteFloat | None = None
    high: FiniteFloat | None = None
    seed: int = 0
    value: Any = None

    @field_validator("shape", mode="before")
    @classmethod
    def _shape(cls, v: Any) -> Any:
        if v is None:
            return v
        if not isinstance(v, list):
            raise ValueError(f"shape must be a list of dimensions, got {v!r}")
        if not v:
            raise ValueError("shape is empty; give at least one dimension (a scalar is `{ value = ... }`)")
        for i, dim in enumerate(v):
            if isinstance(dim, bool) or not isinstance(dim, (int, str)):
                shown = json.dumps(dim, default=str)  # TOML spelling: true, not True
                raise ValueError(f"shape[{i}] is {shown}: each dimension is a positive int or a size symbol name")
            if isinstance(dim, int) and dim < 1:
                raise ValueError(f"shape[{i}] is {dim}: dimensions must be >= 1")
            if isinstance(dim, str) and not dim.isidentifier():
                raise ValueError(f"shape[{i}] {dim!r} is neither an int nor a size symbol name")
        return v

    @model_validator(mode="after")
    def _check(self) -> "InputSpec":
        has_value = "value" in self.model_fields_set
        forms = [k for k, on in (("value", has_value), ("shape", self.shape is not None),
                                 ("enum", self.enum is not None), ("call", self.call is not None),
                                 ("array", self.array is not None)) if on]
        if len(forms) > 1:
            raise ValueError(f"give either `value`, `shape`, `enum`, `call` or `array`, not several "
                             f"(got {' and '.join(forms)})")
        if self.kwargs is not None and self.call is None:
            raise ValueError("`kwargs` goes with `call` (a config object built from fields)")
        if self.output and self.shape is None:
            raise ValueError("`output = true` needs a `shape` (the buffer the kernel writes into)")
        if self.enum is not None or self.call is not None:
            check_named(self.enum if self.enum is not None else self.call, "enum" if self.enum else "call")
            for key, val in (self.kwargs or {}).items():
                named_value(val, f"kwargs.{key}")
            return self
        if self.array is not None:
            if self.dtype is None:
                raise ValueError(f"a literal `array` needs a `dtype` (one of {', '.join(DTYPES)})")
            try:
                arr = np.asarray(self.array, dtype=np.float64)
            except (ValueError, TypeError):
                raise ValueError("`array` must be a (nested) list of numbers with equal-length rows") from None
            if arr.size > 65_536 or not np.all(np.isfinite(arr)):
                raise ValueError("`array` must hold at most 65536 finite numbers")
        if not forms:
            if self.dtype is None:
                raise ValueError("missing `shape` (or `value` for a scalar/option, `enum`, `call`, `array`, "
                                 "or `dtype` alone for a dtype argument)")
            forms = ["dtype"]
        if has_value or forms == ["dtype"]:
            if forms == ["dtype"] and _ALIASES.get(self.dtype, self.dtype) not in DTYPES:
                raise ValueError(f"unknown dtype {self.dtype!r}; known: {', '.join(DTYPES)}")
            return self
        if self.dtype is None:
            raise ValueError(f"missing `dtype` (one of {', '.join(DTYPES)})")
        try:
            resolve_dtype(self.dtype)
        except KeyError:
            raise ValueError(f"unknown dtype {self.dtype!r}; known: {', '.join(DTYPES)}") from None
        if self.dist == "uniform" and self.low is not None and self.high is not None and self.low >= self.high:
            raise ValueError(f"uniform needs low < high, got low={self.low} high={self.high}")
        if self.dist == "randint" and self.low is not None and self.high is not None and self.low >= self.high:
            raise ValueError(f"randint needs low < high, got low={self.low} high={self.high}")
        if self.scale < 0:
            raise ValueError("scale must be >= 0")
        return self

    @property
    def is_value(self) -> bool:
        """Not a generated array (a value, enum, dtype, config or literal array)."""
        return self.shape is None

    @property
    def kind(self) -> str:
        if "value" in self.model_fields_set:
            return "value"
        for k in ("shape", "enum", "call", "array"):
            if getattr(self, k) is not None:
                return "generated" if k == "shape" else k
        return "dtype"

    @property
    def np_dtype(self) -> np.dtype:
        return resolve_dtype(self.dtype or "float32")

    @property
    def symbols(self) -> list[str]:
        return [d for d in (self.shape or []) if isinstance(d, str)]


def check_named(text: str, what: str) -> None:
    """An enum member / config callable is a dotted Python name ("ActFnType.SiLU", ".types.Config")."""
    if not isinstance(text, str) or not all(p.isidentifier() for p in text.lstrip(".").split(".")):
        raise ValueError(f"`{what}` must be a dotted Python name like \"ActFnType.SiLU\", got {text!r}")


def named_value(val: Any, where: str) -> Any:
    """Validate a `kwargs` field: a plain value, a list, or a table with one of enum / dtype / call."""
    if isinstance(val, dict):
        keys = set(val)
        if keys == {"enum"}:
            check_named(val["enum"], f"{where}.enum")
        elif keys == {"dtype"}:
            if _ALIASES.get(val["dtype"], val["dtype"]) not in DTYPES:
                raise ValueError(f"{where}.dtype: unknown dtype {val['dtype']!r}")
        elif keys in ({"call"}, {"call", "kwargs"}):
            check_named(val["call"], f"{where}.call")
            if not isinstance(val.get("kwargs", {}), dict):
                raise ValueError(f"{where}.kwargs must be a table")
            for k, v in val.get("kwargs", {}).items():
                named_value(v, f"{where}.kwargs.{k}")
        else:
            raise ValueError(f"{where}: a table field needs exactly one of enum, dtype, call (+kwargs); "
                             f"got {sorted(keys)}")
    elif isinstance(val, list):
        for i, v in enumerate(val):
            named_value(v, f"{where}[{i}]")
    return val


class SizeSpec(BaseModel):
    """One `[[sizes]]` table: a name plus integer bindings of the shape symbols."""

    model_config = ConfigDict(extra="allow")
    name: str

    @property
    def bindings(self) -> dict[str, int]:
        return dict(self.model_extra or {})

    @model_validator(mode="after")
    def _ints(self) -> "SizeSpec":
        for key, val in (self.model_extra or {}).items():
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise ValueError(f"size symbol {key} must be a positive int, got {val!r}")
        return self


class Tolerance(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rtol: FiniteFloat = Field(default=1e-2, ge=0)
    atol: FiniteFloat = Field(default=1e-3, ge=0)


class Golden(BaseModel):
    """Inputs/outputs captured from the real CUDA kernel on a GPU (npz, arrays named like the inputs).

    Either one pair (`inputs`/`outputs`, for `size`), or `dir`: what `nki-assist golden` writes, one
    pair per size plus golden.json (golden_store.py), matched to each size by name and input hashes."""

    model_config = ConfigDict(extra="forbid")
    inputs: str | None = None
    outputs: str | None = None
    size: str | None = None  # the size the captured arrays belong to (default: the first size)
    dir: str | None = None  # a capture folder written by `nki-assist golden`

    @model_validator(mode="after")
    def _one_form(self) -> "Golden":
        if self.dir is not None and (self.inputs or self.outputs or self.size):
            raise ValueError("give either `dir` (a capture by `nki-assist golden`) or `inputs`/`outputs`/`size`")
        return self


class ReviewSection(BaseModel):
    """`[review]`: how `nki-assist review` treats this port (design.md "Port spec")."""

    model_config = ConfigDict(extra="forbid")
    # the extra size with pairwise distinct dimensions (numerics/distinct_size.py): "auto" adds it only when the
    # sizes let two dimensions or tile constants coincide, "always" whenever a legal one exists, "off" never
    distinct_dims: Literal["auto", "always", "off"] = "auto"


class _SpecFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    port: PortSection
    review: ReviewSection = Field(default_factory=ReviewSection)
    inputs: dict[str, InputSpec] = Field(default_factory=dict)
    sizes: list[SizeSpec] = Field(default_factory=list)
    tolerance: Tolerance = Field(default_factory=Tolerance)
    golden: Golden | None = None
    cuda: CudaLaunch | None = None
