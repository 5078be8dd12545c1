"""nl.NKIObject (the base of NKI kernel dataclasses and config objects) and nl.shared_identity_matrix."""

from __future__ import annotations

import numpy as np

from . import context, core
from .dtypes import resolve
from .tensor import Tensor, allocate


class NKIObject:
    """nki.language.NKIObject: `__init__(**kwargs)` sets the fields; subclasses are often dataclasses."""

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


def shared_identity_matrix(n, dtype=None, dst=None, **kw):
    """An n x n identity in SBUF (default uint8), or written into `dst` when given."""
    ctx = context.current()
    n = int(n)
    if dst is not None:
        _, line, depth = core.ctx_site()
        return core.emit(ctx, "shared_identity_matrix", "gpsimd", line, depth, np.eye(n, dtype=np.float32),
                         dst=dst, dtype=dst.st.dt, srcs=[])
    dt = resolve(dtype if dtype is not None else "uint8")
    data = np.eye(n, dtype=np.float64).astype(dt.store)
    st = allocate((n, n), dt, "sbuf", line=ctx.line(), name="shared_identity_matrix", data=data, written=True,
                  role="input")
    return Tensor(st)
