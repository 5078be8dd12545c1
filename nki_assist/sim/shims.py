"""Fake `neuronxcc.nki.*` / `nki.*` modules, installed in sys.modules only while a kernel loads and runs.

Unknown attributes of these modules resolve to a stub that raises `UnsupportedAPI` when used, so the
finding names the API and the kernel line. Imports of other missing packages (torch, torch_xla, jax, ...)
made by the kernel file resolve to permissive stub modules: the file loads, and only code that really
calls into them fails (again as `UnsupportedAPI`).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import itertools
import os
import sys
import types

from . import context, isa, language
from .context import UnsupportedAPI

_FRAMEWORKS = ("torch", "jax", "tensorflow", "cupy")


class Stub:
    """Stands for an API the simulator lacks; any real use raises UnsupportedAPI(name)."""

    def __init__(self, name: str):
        object.__setattr__(self, "_name", name)

    def __getattr__(self, item):
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        return Stub(f"{self._name}.{item}")

    def __call__(self, *a, **k):
        if len(a) == 1 and not k and (inspect.isfunction(a[0]) or isinstance(a[0], type)):
            return a[0]  # used as a decorator: keep the function
        nki_call = self._name.startswith(("neuronxcc.nki.", "nki.")) and ".compiler." not in self._name
        if not a and not (k and nki_call):
            return Stub(f"{self._name}()")  # decorator factory / config call: fail later if really used
        # a host-side helper module this environment lacks (scipy for a constant): a tool limit; tensor
        # frameworks (torch, jax) called from a kernel are not NKI at all and stay SIM115
        if not self._name.startswith(("neuronxcc", "nki") + _FRAMEWORKS):
            exc = UnsupportedAPI(self._name, "its module is not installed here (replaced by a stub)", limit=True)
            exc.missing_module = True
            raise exc
        raise UnsupportedAPI(self._name)  # an NKI instruction called with keyword operands fails right here

    def __getitem__(self, item):
        return self

    def __enter__(self):  # `with torch.no_grad():` around harness code
        return self

    def __exit__(self, *exc):
        return False

    def __mro_entries__(self, bases):
        return (object,)

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __repr__(self):
        return f"<unsupported {self._name}>"

    def _fail(self, *a, **k):
        raise UnsupportedAPI(self._name)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __iter__ = __len__ = __int__ = __float__ = __index__ = _fail


class ShimModule(types.ModuleType):
    """A simulated NKI module; unknown attributes become `Stub`s."""

    def __getattr__(self, item):
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        return Stub(f"{self.__name__}.{item}")


class PermissiveModule(ShimModule):
    """A missing third-party module the kernel imports (torch, jax, ...)."""


# -- kernels and decorators ------------------------------------------------------------------------
class Kernel:
    """What `@nki.jit` returns: callable, and `kernel[grid](...)` runs a launch grid."""

    def __init__(self, fn, **options):
        self.fn = fn
        self.options = options
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __getitem__(self, grid):
        fn = self.fn

        def launch(*args, **kwargs):
            return run_grid(fn, grid, args, kwargs)

        return launch


def jit(fn=None, *args, **options):
    if fn is None or not callable(fn):
        return lambda f: Kernel(f, **options)
    return Kernel(fn, **options)


def _passthrough_decorator(fn=None, *a, **k):
    if fn is None or not callable(fn):
        return lambda f: f
    return fn


def _simulate_kernel(kernel, *args, **kwargs):
    return kernel(*args, **kwargs)


def _simulate(kernel, *a, **k):
    return kernel


class _Typing:
    """nki.typing: `nt.tensor[128, 512]`, `nt.mutable_tensor`, `nt.scalar` are annotations only."""

    def __class_getitem__(cls, item):
        return cls


def _module(name: str, ns: dict, cls=ShimModule, package: bool = False) -> types.ModuleType:
    m = cls(name)
    m.__dict__.update(ns)
    m.__file__ = f"<nki-assist simulator: {name}>"
    if package:
        m.__path__ = []
    m.__nki_assist_shim__ = True
    return m


def build_modules(target) -> dict[str, types.ModuleType]:
    lang_ns = language.namespace(target)
    legacy_isa = isa.legacy_namespace()
    new_isa = isa.new_namespace()
    typing_ns = {"tensor": _Typing, "mutable_tensor": _Typing, "scalar": _Typing, "Tensor": _Typing}
    compiler_ns = {
        "skip_middle_end_transformations": _passthrough_decorator,
        "enable_stack_allocator": _passthrough_decorator,
        "force_auto_alloc": _passthrough_decorator,
        # direct allocation (`ncc.sbuf.mod_alloc(...)`) and scheduling directives (no effect on values)
        "sbuf": language.BUFFERS["sbuf"], "psum": language.BUFFERS["psum"],
        "multi_buffer": lambda *a, **k: None,
    }
    mods: dict[str, types.ModuleType] = {}
    for root, isa_ns in (("neuronxcc.nki", legacy_isa), ("nki", new_isa)):
        # packages, so that submodule imports (`neuronxcc.nki.compiler.backends...`) become stub modules
        lang = _module(f"{root}.language", lang_ns, package=True)
        isam = _module(f"{root}.isa", isa_ns, package=True)
        typ = _module(f"{root}.typing", typing_ns, package=True)
        comp = _module(f"{root}.compiler", compiler_ns, package=True)
        top = _module(root, {
            "jit": jit, "baremetal": jit, "benchmark": jit, "profile": jit, "trace": jit,
            "simulate_kernel": _simulate_kernel, "simulate": _simulate, "language": lang, "isa": isam,
            "typing": typ, "compiler": comp, "tensor": _Typing,
        }, package=True)
        consts = _module(f"{root}.language.constants", {"sizeinbytes": language.sizeinbytes})
        lang.constants = consts
        mods.update({root: top, f"{root}.language": lang, f"{root}.isa": isam, f"{root}.typing": typ,
                     f"{root}.compiler": comp, f"{root}.language.constants": consts})
    mods["neuronxcc"] = _module("neuronxcc", {"nki": mods["neuronxcc.nki"]}, package=True)
    return mods


# -- the import hook for missing modules -----------------------------------------------------------
class _StubLoader(importlib.abc.Loader):
    def __init__(self, shim_roots):
        self.shim_roots = shim_roots

    def create_module(self, spec):
        cls = ShimModule if spec.name.split(".")[0] in self.shim_roots else PermissiveModule
        return _module(spec.name, {}, cls=cls, package=True)

    def exec_module(self, module):
        return None


_UTIL_FILES = {importlib.util.find_spec.__code__.co_filename}


class MissingModuleFinder(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: imports the kernel file makes that nothing else can satisfy become stubs."""

    def __init__(self, kernel_file: str, shim_roots=("neuronxcc", "nki"), package_dir: str | None = None):
        self.kernel_file = kernel_file
        self.kernel_dir = os.path.dirname(kernel_file)
        self.package_dir = package_dir  # a kernel in a package: every module below it is the kernel's own
        self.loader = _StubLoader(shim_roots)
        self.stubbed: list[str] = []

    def find_spec(self, fullname, path=None, target=None):
        root = fullname.split(".")[0]
        parent = sys.modules.get(root)
        if not (fullname.split(".")[0] in self.loader.shim_roots or isinstance(parent, ShimModule)
                or self._from_kernel()):
            return None
        self.stubbed.append(fullname)
        return importlib.machinery.ModuleSpec(fullname, self.loader, is_package=True)

    def _from_kernel(self) -> bool:
        f = sys._getframe(1)
        while f is not None:
            fn = f.f_code.co_filename
            if f.f_code.co_name == "find_spec" and fn in _UTIL_FILES:
                return False  # a probe (`importlib.util.find_spec`) asks whether it exists: it does not
            if fn == self.kernel_file or os.path.dirname(fn) == self.kernel_dir:  # the kernel or its helpers
                return True
            if self.package_dir and fn.startswith(self.package_dir + os.sep):
                return True
            if not fn.startswith("<frozen") and "importlib" not in fn and fn != __file__:
                return False
            f = f.f_back
        return False


class Installed:
    """Context manager: shims + missing-module finder in place; everything restored on exit."""

    def __init__(self, target, kernel_file: str, kernel_dir: str, package=None):
        self.mods = build_modules(target)
        self.package = package  # packages.Package: its root goes on sys.path instead of the kernel's folder
        self.finder = MissingModuleFinder(kernel_file, package_dir=package.top_dir if package else None)
        self.kernel_dir = package.root if package else kernel_dir

    def __enter__(self):
        self.before = dict(sys.modules)
        for name in list(sys.modules):
            if name == "neuronxcc" or name.startswith("neuronxcc.") or name == "nki" or name.startswith("nki."):
                del sys.modules[name]
        sys.modules.update(self.mods)
        sys.meta_path.append(self.finder)
        self.path_added = self.kernel_dir not in sys.path
        if self.path_added:
            sys.path.insert(0, self.kernel_dir)
        return self

    def __exit__(self, *exc):
        try:
            sys.meta_path.remove(self.finder)
        except ValueError:
            pass
        if self.path_added:
            try:
                sys.path.remove(self.kernel_dir)
            except ValueError:
                pass
        for name in list(sys.modules):
            if name not in self.before:
                mod = sys.modules[name]
                mod_file = getattr(mod, "__file__", None) or ""
                if (getattr(mod, "__nki_assist_shim__", False) or name.startswith("nki_assist_kernel_")
                        or os.path.dirname(os.path.abspath(mod_file)) == self.kernel_dir
                        or (self.package and name.split(".")[0] == self.package.module.split(".")[0])):
                    del sys.modules[name]  # shims, stubs and the kernel's own helper modules
        for name, mod in self.before.items():
            if sys.modules.get(name) is not mod:
                sys.modules[name] = mod
        return False

    @property
    def stubbed(self) -> list[str]:
        return [n for n in self.finder.stubbed if n.split(".")[0] not in ("neuronxcc", "nki")]


__all__ = ["Installed", "Kernel", "Stub", "UnsupportedAPI", "context"]


def run_grid(fn, grid, args, kwargs):
    """Run every program of a launch grid in order; shared_hbm tensors are shared across programs."""
    ctx = context.current()
    if isinstance(grid, int) or not isinstance(grid, (tuple, list)):
        grid = (grid,)
    grid = tuple(int(g) if not isinstance(g, Stub) else 1 for g in grid)
    saved = (ctx.grid, ctx.pid)
    ctx.grid = grid
    ret = None
    try:
        for pid in itertools.product(*[range(g) for g in grid]):
            ctx.pid = pid
            ctx.shared_cursor = 0
            r = fn(*args, **(kwargs or {}))
            if ret is None:
                ret = r
    finally:
        ctx.grid, ctx.pid = saved
    return ret
