"""Run tile-sized matmuls on one BLAS thread.

A simulated matmul is one small GEMM (128x128 by 128x512); multi-threaded OpenBLAS spends more time
waking threads than computing at that size, and on an oversubscribed machine it is 10-30x slower
than one thread. `one_blas_thread()` sets numpy's bundled OpenBLAS to one thread for the duration of a
run and restores the previous count (threadpoolctl does the same; it is not a dependency here).
"""

from __future__ import annotations

import ctypes
import glob
import os
from contextlib import contextmanager

_PAIRS = [("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
          ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
          ("openblas_get_num_threads", "openblas_set_num_threads")]
_funcs = None


def _find():
    global _funcs
    if _funcs is not None:
        return _funcs
    _funcs = ()
    try:
        import numpy

        base = os.path.dirname(os.path.dirname(numpy.__file__))
        libs = glob.glob(os.path.join(base, "numpy.libs", "*openblas*.so*")) + glob.glob(
            os.path.join(os.path.dirname(numpy.__file__), ".libs", "*openblas*"))
        for path in libs:
            lib = ctypes.CDLL(path)
            for get, set_ in _PAIRS:
                if hasattr(lib, get) and hasattr(lib, set_):
                    g, s = getattr(lib, get), getattr(lib, set_)
                    g.restype = ctypes.c_int
                    s.argtypes = [ctypes.c_int]
                    _funcs = (g, s)
                    return _funcs
    except (OSError, ImportError):
        pass
    return _funcs


@contextmanager
def one_blas_thread():
    funcs = _find()
    if not funcs:
        yield False
        return
    get, set_ = funcs
    before = get()
    set_(1)
    try:
        yield True
    finally:
        set_(before)
