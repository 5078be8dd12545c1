"""Storage dtypes of the simulator.

Floats are *stored* as float32 arrays holding values already rounded to the declared dtype (so engine
math, which is fp32 on every NeuronCore engine [nki-facts §3], reads them without a conversion), and are
converted to the declared ml_dtypes dtype only when a kernel output is returned. Integers and bool are
stored natively. Rounding is round-to-nearest-even through ml_dtypes (bit-identical to
`np.asarray(x, np.float32).astype(ml_dtypes.bfloat16)`), or stochastic rounding when asked.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .errors import UnsupportedAPI

F32 = np.dtype(np.float32)


@dataclass(frozen=True, eq=False)
class DType:
    name: str  # NKI / ml_dtypes name: float32, bfloat16, float8_e4m3, int32, ...
    np_dtype: np.dtype  # declared dtype, used for returned outputs
    store: np.dtype  # storage dtype in the simulator (float32 for every float)
    itemsize: int  # bytes on the device
    is_float: bool
    low_precision: bool  # rounds on write (bf16/fp16/fp8)

    def __repr__(self) -> str:  # kernels print dtypes
        return self.name


def _mk(name: str, np_dtype, itemsize: int | None = None) -> DType:
    npd = np.dtype(np_dtype)
    is_float = npd.kind in "fV" or name.startswith(("float", "bfloat", "tfloat"))
    store = F32 if is_float else npd
    low = is_float and name not in ("float32", "tfloat32", "float32r", "float64")
    return DType(name, npd, store, itemsize or npd.itemsize, is_float, low)


_TABLE: dict[str, DType] = {}
for _name, _np in [
    ("float32", np.float32), ("bfloat16", ml_dtypes.bfloat16), ("float16", np.float16),
    ("float8_e4m3", ml_dtypes.float8_e4m3), ("float8_e5m2", ml_dtypes.float8_e5m2),
    ("float8_e4m3fn", ml_dtypes.float8_e4m3fn), ("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu),
    ("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz), ("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz),
    ("float8_e3m4", ml_dtypes.float8_e3m4), ("float4_e2m1fn", ml_dtypes.float4_e2m1fn),
    ("int8", np.int8), ("int16", np.int16), ("int32", np.int32), ("int64", np.int64),
    ("uint8", np.uint8), ("uint16", np.uint16), ("uint32", np.uint32), ("uint64", np.uint64),
    ("bool_", np.bool_), ("float64", np.float64),
]:
    _TABLE[_name] = _mk(_name, _np)
# tfloat32 / float32r are fp32 in memory; only TensorE treats them differently (not modelled).
_TABLE["tfloat32"] = DType("tfloat32", F32, F32, 4, True, False)
_TABLE["float32r"] = DType("float32r", F32, F32, 4, True, False)
_ALIASES = {"bool": "bool_", "fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16",
            "float": "float32", "int": "int32", "float8e4": "float8_e4m3", "float8e5": "float8_e5m2"}

FLOAT32 = _TABLE["float32"]
INT32 = _TABLE["int32"]
_cache: dict = {}


class UnknownDType(TypeError):
    pass


def resolve(x) -> DType:
    """Any dtype spelling (DType, numpy/ml_dtypes type or dtype, string) -> DType."""
    if isinstance(x, DType):
        return x
    try:
        return _cache[x]
    except (KeyError, TypeError):
        pass
    name = None
    if type(x).__name__ == "Stub":  # e.g. jnp.float32 / torch.bfloat16 from a missing package
        raise UnsupportedAPI(getattr(x, "_name", repr(x)), "used as a dtype")
    if isinstance(x, str):
        name = _ALIASES.get(x, x)
    else:
        try:
            npd = np.dtype(x)
            name = _ALIASES.get(npd.name, npd.name)
        except (TypeError, ValueError):
            name = _ALIASES.get(getattr(x, "name", None) or getattr(x, "__name__", ""), None)
    dt = _TABLE.get(name) if name else None
    if dt is None:
        raise UnknownDType(f"unsupported dtype {x!r}")
    try:
        _cache[x] = dt
    except TypeError:
        pass
    return dt


def exposed(name: str):
    """What `nl.<dtype>` evaluates to: the numpy dtype, so `t.dtype == nl.bfloat16` works both ways."""
    dt = _TABLE[name]
    return dt if name in ("tfloat32", "float32r") else dt.np_dtype


def sentinel(dt: DType):
    """Fill value of a new tile: NaN for floats, a recognisable garbage value for integers."""
    if dt.is_float:
        return np.nan
    if dt.store.kind == "b":
        return True
    info = np.iinfo(dt.store)
    return info.min if info.min < 0 else info.max


class Rounder:
    """Rounds fp32 engine results into a storage dtype (RNE, or stochastic when enabled)."""

    def __init__(self, precise: bool = True, stochastic: bool = False, seed: int = 0):
        self.precise = precise
        self.stochastic = stochastic
        self.rng = np.random.default_rng(seed)

    def __call__(self, value, dt: DType) -> np.ndarray:
        v = value if type(value) is np.ndarray else np.asarray(value)
        if dt.is_float:
            if v.dtype is not F32:
                v = v.astype(F32)
            if not dt.low_precision or not self.precise:
                return v
            if self.stochastic:
                return self._stochastic(v, dt)
            return v.astype(dt.np_dtype).astype(F32)
        if dt.store.kind == "b":
            return v != 0
        if v.dtype.kind == "f":
            # fp32 -> int on the engines rounds to nearest even and saturates [nki-facts §3 Casts].
            info = np.iinfo(dt.store)  # clip in float64: int32 max is not representable in fp32
            v = np.nan_to_num(np.rint(v.astype(np.float64)), nan=0.0, posinf=info.max, neginf=info.min)
            return np.clip(v, info.min, info.max).astype(dt.store)
        if v.dtype != dt.store:
            return v.astype(dt.store)
        return v

    def _stochastic(self, v: np.ndarray, dt: DType) -> np.ndarray:
        if dt.name == "bfloat16":
            u = v.view(np.uint32)
            noise = self.rng.integers(0, 1 << 16, size=u.shape, dtype=np.uint32)
            r = ((u + noise) & np.uint32(0xFFFF0000)).view(F32)
            return np.where(np.isfinite(v), r, v.astype(dt.np_dtype).astype(F32))
        near = v.astype(dt.np_dtype)
        nf = near.astype(F32)
        toward = np.where(nf > v, -np.inf, np.inf).astype(dt.np_dtype)
        other = np.nextafter(near, toward).astype(F32)
        gap = np.abs(other - nf)
        with np.errstate(invalid="ignore", divide="ignore"):
            p_other = np.where(gap > 0, np.abs(v - nf) / gap, 0.0)
        pick = self.rng.random(v.shape) < p_other
        return np.where(pick & np.isfinite(other), other, nf).astype(F32)
