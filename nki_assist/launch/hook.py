"""The simulator's `neuronxcc.nki` / `nki` modules for a whole program, with recording launch APIs.

`install()` puts an import hook first on `sys.meta_path`: the first `import neuronxcc...` or `import nki...`
builds the simulator's modules (sim/shims.py) for the run's target and returns them, shadowing a real SDK
(the default backend is the simulator). Their launch APIs are replaced by `Launcher`s: calling one on arrays
runs the kernel on the simulator (execute.py) and hands the results back to the program. Nothing heavy is
imported until the program imports NKI, so a Python process that never does (pip, a build step) pays nothing.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import logging
import os
import sys

from . import TARGET_ENV

ROOTS = ("neuronxcc", "nki")
LAUNCH_APIS = ("jit", "baremetal", "benchmark", "profile", "trace", "simulate")


def _unwrap(kernel):
    """The plain function and grid behind a kernel object: a Launcher, a sim Kernel, a decorated function."""
    grid = None
    while True:
        if isinstance(kernel, Launcher):
            grid = grid or kernel.grid
            kernel = kernel.fn
        elif hasattr(kernel, "fn") and callable(getattr(kernel, "fn")) and hasattr(kernel, "options"):
            kernel = kernel.fn  # sim.shims.Kernel
        else:
            return kernel, grid


class _BenchmarkLatency:
    """`bench.benchmark_result.nc_latency.get_latency_percentile(p)`: the cost model's estimate, in us."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds

    def get_latency_percentile(self, percentile=50):
        return None if self.seconds is None else round(self.seconds * 1e6, 3)


class _BenchmarkResult:
    def __init__(self, seconds: float | None):
        self.nc_latency = _BenchmarkLatency(seconds)


class Launcher:
    """What the run's `nki.jit` / `baremetal` / `benchmark` / `simulate` return: calling it on arrays is one
    launch on the simulator; inside a running kernel (a sub-kernel call) it is a plain call."""

    def __init__(self, fn, api: str, options: dict | None = None, grid=None):
        fn, inner_grid = _unwrap(fn)
        self.fn = fn
        self.api = api
        self.options = dict(options or {})
        self.grid = grid or inner_grid
        self.benchmark_result = _BenchmarkResult(None)
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        from ..sim import context  # deferred: the simulator loads when the program first imports NKI

        if context.current() is not None:  # a kernel calling a sub-kernel: already on the simulator
            return self.fn(*args, **kwargs)
        from .execute import launch  # deferred: the simulator and the cost model

        result, seconds = launch(self.fn, args, kwargs, api=self.api, grid=self.grid, caller=sys._getframe(1))
        self.benchmark_result = _BenchmarkResult(seconds)
        return result

    def __getitem__(self, grid):
        return Launcher(self.fn, self.api, self.options, grid=grid if isinstance(grid, tuple) else (grid,))

    def __get__(self, obj, objtype=None):  # a kernel defined as a method
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self):
        return f"<nki-assist {self.api} kernel {getattr(self.fn, '__qualname__', self.fn)!r}>"


def _decorator(api: str):
    def deco(fn=None, *args, **options):
        if fn is None or not callable(fn):
            return lambda f: Launcher(f, api, options)
        return Launcher(fn, api, options)

    deco.__name__ = api
    return deco


def _simulate_kernel(kernel, *args, **kwargs):
    return Launcher(kernel, "simulate_kernel")(*args, **kwargs)


def _simulate(kernel, *args, **kwargs):
    return Launcher(kernel, "simulate")


def _static_cast(value, dtype):
    """Host-side `nl.static_cast(array, dtype)`: the array in that dtype (the SDK's NumPy helper)."""
    import numpy as np  # deferred: only a program that calls it (it has NumPy already)

    from ..sim.dtypes import resolve  # deferred: see the module docstring

    return np.asarray(value).astype(resolve(dtype).np_dtype)


def _excepthook(previous):
    """Record an NKI API the simulator lacks that killed the program from host code: a tool limit."""

    def hook(exc_type, exc, tb):
        try:
            from ..sim.context import UnsupportedAPI  # deferred: the program's exception path only

            if isinstance(exc, UnsupportedAPI):
                from .record import append  # deferred: as above

                frame = None
                while tb is not None:
                    name = tb.tb_frame.f_code.co_filename
                    if not name.startswith(os.path.dirname(os.path.dirname(__file__))):
                        frame = (os.path.abspath(name), tb.tb_lineno)
                    tb = tb.tb_next
                append({"type": "host-limit", "api": exc.api, "file": frame[0] if frame else None,
                        "line": frame[1] if frame else None, "pid": os.getpid()})
        except Exception:  # noqa: BLE001 - recording never hides the program's own traceback
            pass
        previous(exc_type, exc, tb)

    return hook


def build_modules() -> dict:
    """The simulator's NKI modules for the run's target, their launch APIs recording."""
    from ..api.hardware import get_target  # deferred: see the module docstring
    from ..sim.shims import build_modules as sim_modules  # deferred: see the module docstring

    mods = sim_modules(get_target(os.environ.get(TARGET_ENV) or "trn2"))
    if not hasattr(logging, "OFF"):
        # The Neuron SDK's import leaves a `logging.OFF` level behind, and harnesses written on it call
        # `logging.disable(logging.OFF)` (stanford-cs149/asst4-trainium): above CRITICAL, i.e. silence.
        logging.OFF = logging.CRITICAL + 10
    for root in ("neuronxcc.nki", "nki"):
        top = mods[root]
        for api in LAUNCH_APIS:
            setattr(top, api, _decorator(api))
        top.simulate_kernel = _simulate_kernel
        top.simulate = _simulate
        top.__nki_assist_run__ = True
        mods[f"{root}.language"].static_cast = _static_cast
    return mods


class _Loader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        return None


class NkiFinder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: `neuronxcc` / `nki` and their submodules come from the simulator."""

    def __init__(self):
        self.mods: dict | None = None

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in ROOTS:
            return None
        if self.mods is None:
            self.mods = build_modules()
            for name, mod in self.mods.items():  # the whole tree at once: `import nki.language` finds it
                if "." in name:
                    sys.modules.setdefault(name, mod)
        mod = self.mods.get(fullname)
        if mod is None:  # a submodule the simulator does not have: a stub whose use names the API
            from ..sim.shims import ShimModule, _module  # deferred: see the module docstring

            mod = _module(fullname, {}, cls=ShimModule, package=True)
            self.mods[fullname] = mod
        return importlib.machinery.ModuleSpec(fullname, _Loader(mod), is_package=True)


_FINDER: NkiFinder | None = None


def install() -> NkiFinder:
    """Arm this process (idempotent): NKI imports from now on come from the simulator."""
    global _FINDER
    if _FINDER is None:
        _FINDER = NkiFinder()
        sys.meta_path.insert(0, _FINDER)
        sys.excepthook = _excepthook(sys.excepthook)
        for name in [n for n in sys.modules if n.split(".")[0] in ROOTS]:
            del sys.modules[name]  # imported before us (a sitecustomize of its own): re-import from the finder
    return _FINDER
