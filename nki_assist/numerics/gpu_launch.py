"""Launch a compiled kernel on an NVIDIA GPU (the `[gpu]` extra): cuda-python's driver API, or CuPy.

Both take the cubin NVRTC produced (cuda_compile.py), so what runs is what `--dry-run` compiled.
`find_launcher()` says why none is usable (package missing, no GPU, driver error) instead of raising
from deep inside a library.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from .cuda_compile import Compiled
from .cuda_launch import LaunchPlan


class NoGpu(Exception):
    """No launcher can run here; the message says what is missing."""


def _driver_version() -> str | None:
    """The NVIDIA driver's version ("550.54.15") from the kernel module, if loaded."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return None
    m = re.search(r"Kernel Module\s+(?:for \S+\s+)?([\d.]+)", text)
    return m.group(1) if m else None


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def _check(result: Any) -> Any:
    """cuda-python returns (err, *values); raise on an error, return the values."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver error {err}")
    return rest[0] if len(rest) == 1 else (tuple(rest) if rest else None)


class CudaPythonLauncher:
    """cuda-python's driver API (cuda.bindings.driver): module from the cubin, one launch, copies."""

    name = "cuda-python"

    def __init__(self) -> None:
        from cuda.bindings import driver  # type: ignore[import-not-found]

        self.cu = driver
        _check(driver.cuInit(0))
        if _check(driver.cuDeviceGetCount()) < 1:
            raise NoGpu("no CUDA device")
        self.dev = _check(driver.cuDeviceGet(0))
        self.ctx = _check(driver.cuDevicePrimaryCtxRetain(self.dev))
        _check(driver.cuCtxSetCurrent(self.ctx))

    def device(self) -> dict[str, Any]:
        cu = self.cu
        name = _check(cu.cuDeviceGetName(256, self.dev))
        attr = cu.CUdevice_attribute
        major = _check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.dev))
        minor = _check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.dev))
        return {"name": name.split(b"\x00", 1)[0].decode(), "compute_capability": f"{major}.{minor}",
                "driver": _driver_version(), "cuda": _cuda_version(_check(cu.cuDriverGetVersion()))}

    def arch(self) -> str:
        cc = self.device()["compute_capability"].replace(".", "")
        return f"sm_{cc}"

    def load(self, compiled: Compiled, kernel: str) -> Any:
        self._image = np.frombuffer(compiled.image or b"", dtype=np.uint8).copy()  # alive while loaded
        module = _check(self.cu.cuModuleLoadData(self._image.ctypes.data))
        return _check(self.cu.cuModuleGetFunction(module, (compiled.lowered_name or kernel).encode()))

    def launch(self, handle: Any, plan: LaunchPlan, args: list[Any]) -> list[np.ndarray]:
        cu = self.cu
        dptrs, holders = {}, []
        try:
            for a, v in zip(plan.args, args):
                if a.kind == "scalar":
                    holders.append(np.array([v], dtype=np.asarray(v).dtype))
                    continue
                ptr = _check(cu.cuMemAlloc(max(v.nbytes, 1)))
                dptrs[a.index] = ptr
                if v.nbytes:
                    _check(cu.cuMemcpyHtoD(ptr, v.ctypes.data, v.nbytes))
                holders.append(np.array([int(ptr)], dtype=np.uint64))
            params = np.array([h.ctypes.data for h in holders], dtype=np.uint64)
            if plan.shared_bytes > 48 * 1024:
                _check(cu.cuFuncSetAttribute(
                    handle, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    plan.shared_bytes))
            _check(cu.cuLaunchKernel(handle, *plan.grid, *plan.block, plan.shared_bytes, 0, params.ctypes.data, 0))
            _check(cu.cuCtxSynchronize())
            outs = []
            for a in plan.outputs:
                host = np.empty(a.shape, dtype=a.dtype)
                if host.nbytes:
                    _check(cu.cuMemcpyDtoH(host.ctypes.data, dptrs[a.index], host.nbytes))
                outs.append(host)
            return outs
        finally:
            for ptr in dptrs.values():
                cu.cuMemFree(ptr)


class CupyLauncher:
    """CuPy: RawModule from the same cubin, arrays on the current device."""

    name = "cupy"

    def __init__(self) -> None:
        import cupy  # type: ignore[import-not-found]

        self.cp = cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise NoGpu("no CUDA device")

    def device(self) -> dict[str, Any]:
        rt = self.cp.cuda.runtime
        props = rt.getDeviceProperties(0)
        name = props["name"]
        return {"name": name.decode() if isinstance(name, bytes) else str(name),
                "compute_capability": f"{props['major']}.{props['minor']}", "driver": _driver_version(),
                "cuda": _cuda_version(rt.driverGetVersion())}

    def arch(self) -> str:
        return "sm_" + self.device()["compute_capability"].replace(".", "")

    def load(self, compiled: Compiled, kernel: str) -> Any:
        import tempfile

        with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as fh:
            fh.write(compiled.image or b"")
        module = self.cp.RawModule(path=fh.name)
        return module.get_function(compiled.lowered_name or kernel)

    def launch(self, handle: Any, plan: LaunchPlan, args: list[Any]) -> list[np.ndarray]:
        cp = self.cp
        dev = [v if a.kind == "scalar" else cp.asarray(v) for a, v in zip(plan.args, args)]
        handle(plan.grid, plan.block, tuple(dev), shared_mem=plan.shared_bytes)
        cp.cuda.runtime.deviceSynchronize()
        return [cp.asnumpy(dev[a.index]) for a in plan.outputs]


def find_launcher(prefer: str | None = None):
    """A working launcher, or NoGpu saying why there is none (never a library traceback)."""
    reasons = []
    for cls in (CudaPythonLauncher, CupyLauncher):
        if prefer and cls.name != prefer:
            continue
        try:
            return cls()
        except ImportError:
            reasons.append(f"{cls.name}: not installed")
        except NoGpu as exc:
            reasons.append(f"{cls.name}: {exc}")
        except Exception as exc:  # driver missing, no device, library mismatch
            reasons.append(f"{cls.name}: {type(exc).__name__}: {exc}")
    raise NoGpu("no GPU to capture on (" + "; ".join(reasons) + "). Install the GPU extra on a machine with an "
                "NVIDIA GPU (pip install 'nki-assist[gpu]'), or check the mapping and compile without one "
                "with --dry-run")
