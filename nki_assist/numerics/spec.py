"""Port spec (`port.toml`): the CUDA file, the NKI port, the NumPy reference, inputs, sizes, tolerance.

Format in design.md "Port spec". Paths are relative to the spec file. Every problem raises a
`SpecError` whose message names the file, the key and the problem; the CLI turns it into exit 2.
Nothing here runs user code: kernel and reference arities are read from the source with `ast`.
"""

from __future__ import annotations

import ast
import copy
import math
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .cuda_launch import check_launch
from .errors import SpecError
from .npz import npz_headers
from .spec_schema import MAX_SOURCE_BYTES, MAX_SPEC_BYTES, InputSpec, SizeSpec, _SpecFile


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
