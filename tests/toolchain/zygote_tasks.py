"""Tasks the warm-sandbox tests run in the sandbox (imported by name in the child)."""

from __future__ import annotations

import os
import time

import numpy as np

import nki_assist.sim as sim

COUNTER = [0]


def _zygote_pid() -> int:
    """The parent of the supervisor (the worker's parent): the zygote on the warm path."""
    with open(f"/proc/{os.getppid()}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])


def mutate() -> dict:
    """A hostile kernel's side effects on module state: patched NumPy, simulator and a global."""
    np.add = lambda *a, **k: "patched"
    sim.run_kernel = None
    COUNTER[0] += 1
    os.environ["LEAKED_BY_RUN_1"] = "yes"
    return {"counter": COUNTER[0], "zygote": _zygote_pid()}


def observe() -> dict:
    return {"numpy_add_ok": bool(np.add(1, 2) == 3), "sim_ok": callable(sim.run_kernel), "counter": COUNTER[0],
            "leaked_env": "LEAKED_BY_RUN_1" in os.environ, "zygote": _zygote_pid(), "cwd": os.getcwd(),
            "home": os.environ.get("HOME"), "token": os.environ.get("NKI_ASSIST_SANDBOX_ID")}


def spin() -> None:
    while True:
        pass


def allocate(mib: int) -> int:
    return int(np.ones(mib * 2**20, dtype=np.uint8).sum())


def sleep_and_report(path: str) -> None:
    with open(path, "w") as fh:
        fh.write(f"{os.getpid()} {_zygote_pid()}\n")
    time.sleep(60)


def kill_the_zygote() -> None:
    """A kernel that kills the process that forked its run, then lingers."""
    os.kill(_zygote_pid(), 9)
    time.sleep(30)


def blas_core() -> dict:
    """The OpenBLAS kernel family NumPy loaded in this process (fixed when NumPy was imported)."""
    import ctypes
    import glob

    base = os.path.dirname(os.path.dirname(np.__file__))
    for path in glob.glob(os.path.join(base, "numpy.libs", "*openblas*.so*")):
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_corename64_", "openblas_get_corename64_", "openblas_get_corename"):
            if hasattr(lib, name):
                fn = getattr(lib, name)
                fn.restype = ctypes.c_char_p
                return {"core": fn().decode()}
    return {"core": None}
