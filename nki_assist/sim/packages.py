"""Kernels that live in packages: import the file as `package.module`, find the kernel, resolve named values.

A kernel file inside a package (folders with `__init__.py`, or below a `package_root` the spec names) is
imported under its dotted name, so relative imports, sibling modules and their import-time flags behave as
in the package. The kernel may be named by a dotted path (`Class.kernel`, `module.kernel`) or a factory call
with literal arguments (`make_kernel(4).kernel`): anything bound at module level after import, including
definitions under `if HAS_NKI:`.
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
import types
from dataclasses import dataclass
from typing import Any

from ..contracts import callargs


@dataclass(frozen=True)
class Package:
    root: str  # the folder that goes on sys.path
    module: str  # dotted name of the kernel file's module

    @property
    def top_dir(self) -> str:
        return os.path.join(self.root, self.module.split(".")[0])


def find_package(kernel_file: str, root: str | None = None) -> Package | None:
    """The package a kernel file belongs to: below `root` when given, else found from `__init__.py` files."""
    kernel_file = os.path.abspath(kernel_file)
    folder, stem = os.path.split(kernel_file)
    stem = os.path.splitext(stem)[0]
    if root is not None:
        root = os.path.abspath(root)
        rel = os.path.relpath(kernel_file, root)
        if rel.startswith(".."):
            raise LookupError(f"package_root {root} does not contain the kernel file {kernel_file}")
        parts = list(os.path.splitext(rel)[0].split(os.sep))
    else:
        parts = [stem]
        while os.path.isfile(os.path.join(folder, "__init__.py")):
            folder, name = os.path.split(folder)
            parts.insert(0, name)
        if len(parts) == 1:
            return None
        root = folder
    if parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return Package(root, ".".join(parts))


def import_kernel_module(package: Package):
    """Import the kernel's module by its package name (no bytecode written next to the sources)."""
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        importlib.invalidate_caches()
        return importlib.import_module(package.module)
    finally:
        sys.dont_write_bytecode = saved


def _literal_call_args(call: ast.Call, text: str) -> tuple[list, dict]:
    try:
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    except ValueError:
        raise LookupError(f"kernel {text!r}: factory arguments must be literals") from None
    return args, kwargs


def _evaluate(node: ast.AST, namespace: dict, text: str):
    if isinstance(node, ast.Name):
        if node.id not in namespace:
            raise LookupError(f"{node.id!r} is not defined at module level")
        return namespace[node.id]
    if isinstance(node, ast.Attribute):
        base = _evaluate(node.value, namespace, text)
        if not hasattr(base, node.attr):
            raise LookupError(f"{ast.unparse(node.value)} has no attribute {node.attr!r}")
        return getattr(base, node.attr)
    if isinstance(node, ast.Call):
        fn = _evaluate(node.func, namespace, text)
        args, kwargs = _literal_call_args(node, text)
        return fn(*args, **kwargs)
    if isinstance(node, ast.Subscript):  # `kernel[2]`: a launcher that takes its grid by subscript
        base = _evaluate(node.value, namespace, text)
        try:
            key = ast.literal_eval(node.slice)
        except ValueError:
            raise LookupError(f"kernel {text!r}: the subscript must be a literal") from None
        return base[key]
    raise LookupError(f"kernel {text!r}: use a name, a dotted path, kernel[grid] or a factory call with literal "
                      "arguments")


def resolve_kernel(module, text: str, path: str):
    """The object `text` names in the imported kernel module (`fn`, `A.fn`, `make(4)`, `make(4).fn`)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise LookupError(f"kernel name {text!r} is not a name, dotted path or call") from None
    try:
        return _evaluate(node, module.__dict__, text)
    except LookupError as exc:
        raise LookupError(f"{path}: cannot find kernel {text!r}: {exc}") from None


def _lookup(module, dotted: str) -> Any:
    """A dotted name seen from the kernel module: its globals first, then modules (relative to its package)."""
    parts = dotted.split(".")
    if parts[0] and parts[0] in module.__dict__:
        obj = module.__dict__[parts[0]]
        for attr in parts[1:]:
            obj = getattr(obj, attr)
        return obj
    if parts[0]:  # a name the kernel reaches through a module it imported (`common_types.RouterActFnType`)
        hits = [v for v in module.__dict__.values() if isinstance(v, types.ModuleType)
                and not getattr(v, "__nki_assist_shim__", False) and parts[0] in vars(v)]
        if len({id(getattr(m, parts[0])) for m in hits}) == 1:
            obj = getattr(hits[0], parts[0])
            for attr in parts[1:]:
                obj = getattr(obj, attr)
            return obj
    lead = len(dotted) - len(dotted.lstrip("."))
    parts = dotted.lstrip(".").split(".")
    for i in range(len(parts), 0, -1):
        name = "." * lead + ".".join(parts[:i])
        try:
            obj = importlib.import_module(name, module.__package__ or None) if lead else importlib.import_module(name)
        except (ImportError, TypeError, ValueError):
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise LookupError(f"{dotted!r} is neither bound in the kernel module nor importable")


def resolve_value(module, value: Any) -> Any:
    """Turn spec-named values (enum members, NKI dtypes, config objects) into the package's own objects."""
    if isinstance(value, callargs.Output):
        return callargs.Output(resolve_value(module, value.value))
    if isinstance(value, list):
        return [resolve_value(module, v) for v in value]
    if not isinstance(value, callargs.Named):
        return value
    try:
        if value.kind == "dtype":
            lang = sys.modules.get("nki.language") or sys.modules.get("neuronxcc.nki.language")
            return getattr(lang, value.text)
        if value.kind == "call":
            fn = _lookup(module, value.text)
            kwargs = {k: resolve_value(module, v) for k, v in value.kwargs.items()}
            try:
                return fn(**kwargs)
            except Exception as exc:  # noqa: BLE001 - a config the spec built wrongly is the spec's problem
                raise LookupError(f"calling it raised {type(exc).__name__}: {exc}") from None
        return _lookup(module, value.text)
    except AttributeError as exc:
        raise LookupError(f"the spec's {value.kind} {value.text!r}: {exc}") from None
    except LookupError as exc:
        raise LookupError(f"the spec's {value.kind} {value.text!r}: {exc}") from None
