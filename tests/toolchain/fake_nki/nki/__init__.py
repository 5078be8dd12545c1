"""Stand-in for the real NKI 0.3+ package, mimicking its documented simulator entry points.

`@nki.jit` wraps a kernel; `nki.simulate(kernel)(*arrays)` runs it eagerly on NumPy and returns the
outputs (nki_simulator.rst). Test knobs (environment): FAKE_NKI_PERTURB adds a value to element
[0, 0] of every output (to provoke a cross-check mismatch); the target is read from
NEURON_PLATFORM_TARGET_OVERRIDE and NKI_PRECISE_FP like the real simulator does.
"""

import os

import numpy as np

from . import isa, language  # noqa: F401

__version__ = "0.0-standin"
LAST_ENV: dict = {}


class _Kernel:
    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__

    def __call__(self, *args, **kwargs):
        raise RuntimeError("this stand-in has no device; use nki.simulate(kernel)(...)")


def jit(fn=None, **_options):
    if fn is None:
        return lambda f: _Kernel(f)
    return _Kernel(fn)


def simulate(kernel):
    def run(*args, **kwargs):
        LAST_ENV.update(target=os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE"),
                        precise=os.environ.get("NKI_PRECISE_FP"))
        out = kernel.fn(*args, **kwargs)
        delta = float(os.environ.get("FAKE_NKI_PERTURB", "0") or 0)
        outs = out if isinstance(out, tuple) else (out,)
        res = []
        for o in outs:
            o = np.array(o)
            if delta:
                o.reshape(-1)[0] = o.reshape(-1)[0] + delta
            res.append(o)
        return res[0] if len(res) == 1 else tuple(res)

    return run
