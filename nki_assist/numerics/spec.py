"""Port spec (`port.toml`): the CUDA file, the NKI port, the NumPy reference, inputs, sizes, tolerance.

Format in design.md "Port spec". Paths are relative to the spec file. Every problem raises a
`SpecError` whose message names the file, the key and the problem; the CLI turns it into exit 2.
Nothing here runs user code: kernel and reference arities are read from the source with `ast`.
"""

from __future__ import annotations

import ast
import copy
import json
import math
import tomllib
from pathlib import Path
from typing import Any, Literal

import ml_dtypes
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, ValidationError, field_validator, model_validator

from ..api.hardware import TARGETS

from .cuda_launch import CudaLaunch, check_launch
from .errors import SpecError
from .npz import npz_headers

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


class PortSpec:
    """A validated port spec; paths resolved against the spec's folder (as given, not absolutized)."""

    def __init__(self, path: Path, data: _SpecFile, kernel_name: str, reference_fn: str | None):
        self.path = path
        self.dir = path.parent
        self.port = data.port
        self.inputs: dict[str, InputSpec] = data.inputs
        self.sizes: list[SizeSpec] = data.sizes
        self.tolerance = data.tolerance
        self.golden = data.golden
        self.cuda = data.cuda  # the [cuda] launch description (cuda_launch.py), or None
        self.review = data.review
        self.added: dict[str, str] = {}  # sizes the review added (name -> why), not in the spec file
        self.kernel_name = kernel_name
        self.reference_function = reference_fn

    @property
    def name(self) -> str:
        return self.port.name

    @property
    def target(self) -> str:
        return self.port.target

    @property
    def nki_path(self) -> Path:
        return self.dir / self.port.nki

    @property
    def cuda_path(self) -> Path | None:
        return self.dir / self.port.cuda if self.port.cuda else None

    @property
    def reference_path(self) -> Path | None:
        return self.dir / self.port.reference.split(":")[0] if self.port.reference else None

    @property
    def package_root(self) -> Path | None:
        return self.dir / self.port.package_root if self.port.package_root else None

    @property
    def grid(self) -> tuple[int, ...] | None:
        return tuple(self.port.grid) if self.port.grid else None

    def size(self, name: str) -> SizeSpec:
        for s in self.sizes:
            if s.name == name:
                return s
        raise KeyError(f"no size {name!r} in {self.path}; sizes: {', '.join(s.name for s in self.sizes)}")

    def with_added_size(self, size: SizeSpec, why: str) -> "PortSpec":
        """A copy with one more size that the tool chose (the review's distinct-dims size), marked as added."""
        other = copy.copy(self)
        other.sizes = [*self.sizes, size]
        other.added = {**self.added, size.name: why}
        return other

    def shape_of(self, input_name: str, size: SizeSpec) -> tuple[int, ...]:
        spec = self.inputs[input_name]
        b = size.bindings
        return tuple(d if isinstance(d, int) else b[d] for d in spec.shape or ())

    def input_bytes(self, size: SizeSpec) -> int:
        """Bytes of all generated arrays of a size (float64 scratch not counted)."""
        total = 0
        for name, spec in self.inputs.items():
            if not spec.is_value:
                total += math.prod(self.shape_of(name, size)) * spec.np_dtype.itemsize
        return total

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "target": self.target, "nki": str(self.nki_path),
                "nki_kernel": self.kernel_name,
                "cuda": str(self.cuda_path) if self.cuda_path else None,
                "reference": self.port.reference}


def _loc(loc: tuple) -> str:
    parts: list[str] = []
    for p in loc:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts) or "(top level)"


def _functions(path: Path, where: str) -> dict[str, ast.FunctionDef]:
    """Top-level functions of a Python file; SpecError (naming `where`, e.g. "port.toml: port.nki")
    when it cannot be read, is not UTF-8 or does not parse."""
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            raise SpecError(f"{where}: {path} has {path.stat().st_size:,} bytes; the limit is {MAX_SOURCE_BYTES:,}")
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"{where}: cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SpecError(f"{where}: {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); "
                        "save it as UTF-8") from None
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise SpecError(f"{where}: {path} does not parse: {exc.msg} (line {exc.lineno})") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        raise SpecError(f"{where}: {path} does not parse: {type(exc).__name__}: {exc}") from None
    return _module_functions(tree.body)


def _module_functions(body: list[ast.stmt]) -> dict[str, ast.FunctionDef]:
    """Functions bound at module level, also under `if HAS_NKI:` / `try:` / `with` (first definition wins)."""
    out: dict[str, ast.FunctionDef] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.setdefault(node.name, node)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            inner = list(node.body) + list(getattr(node, "orelse", []))
            for h in getattr(node, "handlers", []):
                inner += h.body
            inner += getattr(node, "finalbody", [])
            for name, fn in _module_functions(inner).items():
                out.setdefault(name, fn)
    return out


def _module_names(path: Path) -> set[str]:
    """Every name bound at module level (defs, classes, assignments, imports), for dotted kernel names."""
    tree = ast.parse(path.read_text(encoding="utf-8-sig"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _is_kernel(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("jit", "trace", "baremetal", "benchmark", "simulate_kernel", "nki_jit"):
            return True
    return False


def arity(fn: ast.FunctionDef) -> tuple[int, int | None]:
    """(required positional, max positional or None for *args)."""
    a = fn.args
    positional = len(a.posonlyargs) + len(a.args)
    required = positional - len(a.defaults)
    return required, None if a.vararg else positional


def _check_arity(fn: ast.FunctionDef, n: int, where: str, what: str, names: list[str],
                 keywords: list[str] = ()) -> str | None:
    lo, hi = arity(fn)
    a = fn.args
    params = [x.arg for x in a.posonlyargs + a.args]
    # required positionals the spec passes by keyword count as given
    given = n + sum(1 for k in keywords if k in params[n:lo])
    if given < lo or (hi is not None and n > hi):
        takes = f"{lo}" if lo == hi else (f"{lo} to {hi}" if hi is not None else f"at least {lo}")
        return (f"{where}: {what} {fn.name!r} (line {fn.lineno}) takes {takes} positional arguments, "
                f"but [inputs] declares {n} ({', '.join(names) or 'none'})")
    if a.kwarg is None:
        known = set(params[n:]) | {x.arg for x in a.kwonlyargs}
        unknown = [k for k in keywords if k not in known]
        if unknown:
            return (f"{where}: {what} {fn.name!r} (line {fn.lineno}) has no keyword parameter "
                    f"{', '.join(map(repr, unknown))} (inputs with keyword = true)")
    missing = [x.arg for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is None and x.arg not in keywords]
    if missing:
        return (f"{where}: {what} {fn.name!r} (line {fn.lineno}) requires keyword argument(s) "
                f"{', '.join(missing)}; add them to [inputs] with keyword = true")
    return None


def _dotted_root(text: str) -> str | None:
    """The module-level name a kernel path starts from ("make" for "make(4).k"), None when malformed."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        if isinstance(node, ast.Subscript):
            try:
                ast.literal_eval(node.slice)
            except ValueError:
                return None
            node = node.value
        elif isinstance(node, ast.Call):
            try:
                [ast.literal_eval(a) for a in node.args] + [ast.literal_eval(k.value) for k in node.keywords]
            except ValueError:
                return None
            node = node.func
        else:
            node = node.value
    return node.id if isinstance(node, ast.Name) else None


def load_spec(path: str | Path) -> PortSpec:
    """Read and validate a port spec; raise `SpecError` naming file, key and problem."""
    path = Path(path)
    where = str(path)
    if not path.is_file():
        raise SpecError(f"{where}: spec file not found" if not path.exists() else f"{where}: not a regular file")
    if path.stat().st_size > MAX_SPEC_BYTES:
        raise SpecError(f"{where}: {path.stat().st_size:,} bytes; a port spec is at most {MAX_SPEC_BYTES:,}")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{where}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nesting level: a 1,000-deep array
        raise SpecError(f"{where}: invalid TOML: arrays or tables nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{where}: not UTF-8 text: {exc}") from None
    try:
        data = _SpecFile.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "missing":
                msg = "required key is missing"
            elif err["type"] == "extra_forbidden":
                msg = "unknown key"
            problems.append(f"{where}: {_loc(err['loc'])}: {msg}")
        raise SpecError("\n".join(problems)) from None

    base = path.parent
    files = [("port.nki", data.port.nki), ("port.cuda", data.port.cuda)]
    if data.port.reference:
        files.append(("port.reference", data.port.reference.split(":")[0]))
    if data.golden:
        files += [("golden.inputs", data.golden.inputs), ("golden.outputs", data.golden.outputs)]
    for key, rel in files:
        if rel and not (base / rel).is_file():
            what = "not a regular file" if (base / rel).exists() else "file not found"
            raise SpecError(f"{where}: {key}: {what}: {base / rel}")
        if rel and key.startswith("golden."):
            npz_headers(base / rel, f"{where}: {key}")  # no pickles, readable headers: before anything runs
    if data.golden and data.golden.dir is not None and not (base / data.golden.dir).is_dir():
        raise SpecError(f"{where}: golden.dir: not a folder: {base / data.golden.dir}")

    names = [n for n, i in data.inputs.items() if not i.keyword]
    keywords = [n for n, i in data.inputs.items() if i.keyword]
    if data.port.package_root is not None:
        root = base / data.port.package_root
        if not root.is_dir():
            raise SpecError(f"{where}: port.package_root: not a folder: {root}")
        try:
            (base / data.port.nki).resolve().relative_to(root.resolve())
        except ValueError:
            raise SpecError(f"{where}: port.package_root: {root} does not contain port.nki "
                            f"({base / data.port.nki})") from None
    # Sizes: unique names, every symbol bound, no stray bindings silently ignored.
    symbols = {s for spec in data.inputs.values() for s in spec.symbols}
    if not data.sizes:
        if symbols:
            raise SpecError(f"{where}: sizes: shapes use symbols {sorted(symbols)} but no [[sizes]] binds them")
        data.sizes = [SizeSpec(name="default")]
    seen: set[str] = set()
    for i, size in enumerate(data.sizes):
        if size.name in seen:
            raise SpecError(f"{where}: sizes[{i}].name: duplicate size name {size.name!r}")
        seen.add(size.name)
        for inp, spec in data.inputs.items():
            for sym in spec.symbols:
                if sym not in size.bindings:
                    raise SpecError(f"{where}: inputs.{inp}.shape: symbol {sym!r} is not bound by size "
                                    f"{size.name!r} (sizes[{i}])")
    if data.golden and data.golden.size and data.golden.size not in seen:
        raise SpecError(f"{where}: golden.size: no size named {data.golden.size!r}")
    if data.cuda is not None:
        if not data.port.cuda:
            raise SpecError(f"{where}: cuda: a [cuda] launch needs port.cuda (the .cu file)")
        data.cuda.kernel = data.cuda.kernel or data.port.cuda_kernel

        def shape_of(name: str, size: SizeSpec) -> tuple[int, ...]:
            return tuple(d if isinstance(d, int) else size.bindings[d] for d in data.inputs[name].shape or ())

        check_launch(data.cuda, where, data.inputs, data.sizes, shape_of)

    # Kernel: exists, is the only kernel when unnamed, takes the declared inputs.
    kfuncs = _functions(base / data.port.nki, f"{where}: port.nki")
    kernel = data.port.nki_kernel
    if kernel is None:
        kernels = [n for n, f in kfuncs.items() if _is_kernel(f)] or (list(kfuncs) if len(kfuncs) == 1 else [])
        if len(kernels) != 1:
            found = ", ".join(kernels or kfuncs) or "no functions"
            raise SpecError(f"{where}: port.nki_kernel: cannot tell which kernel to run in {data.port.nki} "
                            f"({found}); set nki_kernel")
        kernel = kernels[0]
    elif kernel not in kfuncs:
        root_name = _dotted_root(kernel)
        if root_name is None:
            raise SpecError(f"{where}: port.nki_kernel: {kernel!r} is not a function name, a dotted path "
                            "(\"Class.kernel\") or a factory call with literal arguments (\"make_kernel(4)\")")
        if root_name == kernel or root_name not in _module_names(base / data.port.nki):
            raise SpecError(f"{where}: port.nki_kernel: no top-level function {kernel!r} in {data.port.nki} "
                            f"(functions: {', '.join(kfuncs) or 'none'})")
    if kernel in kfuncs:  # a dotted path or factory is checked when it runs
        problem = _check_arity(kfuncs[kernel], len(names), f"{where}: port.nki_kernel", "kernel", names, keywords)
        if problem:
            raise SpecError(problem)

    ref_fn = None
    if data.port.reference:
        rfile, ref_fn = (p.strip() for p in data.port.reference.split(":"))
        rfuncs = _functions(base / rfile, f"{where}: port.reference")
        if ref_fn not in rfuncs:
            raise SpecError(f"{where}: port.reference: no top-level function {ref_fn!r} in {rfile} "
                            f"(found: {', '.join(rfuncs) or 'none'})")
        problem = _check_arity(rfuncs[ref_fn], len(names), f"{where}: port.reference", "reference", names,
                               keywords)
        if problem:
            raise SpecError(problem)
    return PortSpec(path, data, kernel, ref_fn)
