"""Kernel inputs from a port spec: seeded per input, generated in float64, rounded once to the dtype.

Every scenario (trainium, trainium-fp32, reference, gpu-model) gets the same rounded values, so a
difference between scenarios is never a difference of inputs. The generator of an input is seeded
from its `seed` and its name, so adding an input or a size does not change the others.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import ml_dtypes
import numpy as np

from ..contracts.callargs import Keyword, Named, Output, PackageRoot, map_values
from .spec import InputSpec, PortSpec, SizeSpec, SpecError

from .npz import load_npz


def input_rng(name: str, seed: int) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(name.encode("utf-8"))])


def _finite_max(dtype: np.dtype) -> float | None:
    if dtype.kind == "f" or dtype.name in ml_dtypes.__dict__:
        try:
            return float(ml_dtypes.finfo(dtype).max)
        except (ValueError, TypeError):
            return None
    return None


def round_to(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round float64 values once to `dtype` (RNE for floats; saturating for fp8 and ints)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.rint(values), info.min, info.max).astype(dtype)
    if dtype.kind == "b":
        return values.astype(bool)
    fmax = _finite_max(dtype)
    if fmax is not None and dtype.itemsize == 1:
        values = np.clip(values, -fmax, fmax)  # fp8 formats without inf turn overflow into NaN
    return values.astype(dtype)


def generate(name: str, spec: InputSpec, shape: tuple[int, ...]) -> np.ndarray:
    rng = input_rng(name, spec.seed)
    n = math.prod(shape)
    if spec.dist == "zeros":
        values = np.zeros(n)
    elif spec.dist == "ones":
        values = np.ones(n)
    elif spec.dist == "uniform":
        low = 0.0 if spec.low is None else spec.low
        high = 1.0 if spec.high is None else spec.high
        values = rng.uniform(low, high, n)
    elif spec.dist == "randint":
        low = 0 if spec.low is None else int(spec.low)
        high = 10 if spec.high is None else int(spec.high)
        values = rng.integers(low, high, n).astype(np.float64)
    else:
        values = spec.mean + spec.scale * rng.standard_normal(n)
    return round_to(values.reshape(shape), spec.np_dtype)


def _golden_inputs(spec: PortSpec, size: SizeSpec, limit_bytes: int | None = None) -> dict[str, np.ndarray] | None:
    g = spec.golden
    if not g or not g.inputs:  # a capture folder (`dir`) holds the generated inputs: nothing to override
        return None
    if (g.size or spec.sizes[0].name) != size.name:
        return None

    where = f"{spec.path}: golden.inputs"
    members = [m for i, n in enumerate(spec.inputs) for m in (n, f"arr_{i}")]  # only what is used is read
    npz = load_npz(spec.dir / g.inputs, where, limit_bytes, members=members)
    arrays = {}
    for i, (name, ispec) in enumerate(spec.inputs.items()):
        if ispec.is_value:
            continue
        key = name if name in npz else f"arr_{i}"
        if key not in npz:
            raise SpecError(f"{where}: no array {name!r} in {g.inputs} (has {', '.join(npz)})")
        arr = npz[key]
        want = spec.shape_of(name, size)
        if tuple(arr.shape) != want:
            raise SpecError(f"{where}: {name} has shape {list(arr.shape)}, size {size.name!r} wants {list(want)}")
        dt = ispec.np_dtype
        if arr.dtype.kind == "V" and arr.dtype.itemsize == dt.itemsize:
            arr = arr.view(dt)  # npz stores ml_dtypes arrays as raw void bytes
        else:
            arr = round_to(arr.astype(np.float64), dt) if arr.dtype != dt else arr
        arrays[name] = arr
    return arrays


def make_inputs(spec: PortSpec, size: SizeSpec | str, limit_bytes: int | None = None) -> list[Any]:
    """Kernel arguments for one size, in the spec's (= kernel positional) order. Callers check the
    size first (numerics.guard); `limit_bytes` bounds what a golden npz may declare."""
    if isinstance(size, str):
        size = spec.size(size)
    golden = _golden_inputs(spec, size, limit_bytes) or {}
    args: list[Any] = []
    for name, ispec in spec.inputs.items():
        kind = ispec.kind
        if kind == "value":
            value = ispec.value
        elif kind == "generated":
            value = golden[name] if name in golden else generate(name, ispec, spec.shape_of(name, size))
        elif kind == "array":
            value = round_to(np.asarray(ispec.array, dtype=np.float64), ispec.np_dtype)
        elif kind == "dtype":
            value = Named("dtype", _dtype_key(ispec.dtype))
        elif kind == "enum":
            value = Named("enum", ispec.enum)
        else:
            value = Named("call", ispec.call, {k: named(v) for k, v in (ispec.kwargs or {}).items()})
        if ispec.output:
            value = Output(value)
        args.append(Keyword(name, value) if ispec.keyword else value)
    if spec.package_root is not None:
        args.append(PackageRoot(str(spec.package_root.resolve())))
    return args


def _dtype_key(name: str) -> str:
    return {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "half": "float16", "float": "float32"}.get(
        name, name)


def named(value: Any) -> Any:
    """A `kwargs` field of a config call: tables with enum / dtype / call become Named, the rest stays."""
    if isinstance(value, dict):
        if "enum" in value:
            return Named("enum", value["enum"])
        if "dtype" in value:
            return Named("dtype", _dtype_key(value["dtype"]))
        return Named("call", value["call"], {k: named(v) for k, v in value.get("kwargs", {}).items()})
    if isinstance(value, list):
        return [named(v) for v in value]
    return value


def _up(a: Any) -> Any:
    if isinstance(a, np.ndarray) and (a.dtype.kind == "f" or a.dtype.kind == "V" or _finite_max(a.dtype)):
        return a.astype(np.float64)
    return a


def upcast(args: list[Any]) -> list[Any]:
    """What the reference sees: float arrays (any storage dtype) as float64, the rest unchanged (call
    markers kept: the reference's child unwraps them with callargs.for_reference)."""
    return map_values(args, _up)
