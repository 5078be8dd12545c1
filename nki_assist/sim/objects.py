"""nl.NKIObject (the base of NKI kernel dataclasses and config objects) and nl.shared_identity_matrix."""

from __future__ import annotations

import numpy as np

from . import context, core
from .dtypes import resolve
from .tensor import Tensor, allocate


class NKIObject:
    """nki.language.NKIObject: the base of NKI kernel dataclasses and config objects.

    Subclasses take their fields as keyword (or, for annotated fields, positional) arguments, also when
    `@dataclass` found no annotated fields to build an `__init__` from (nki-library's `SectionParams` declares
    `section_idx = None` and is constructed with `SectionParams(section_idx=...)`): every subclass gets this
    `__init__` before the decorator runs, and the decorator does not replace an `__init__` a class has."""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "__init__" not in cls.__dict__:
            cls.__init__ = _init

    def __init__(self, **kwargs):
        _init(self, **kwargs)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


def _init(self, *args, **kwargs):
    cls = type(self)
    names: list[str] = []
    for c in reversed(cls.__mro__):
        for n in getattr(c, "__annotations__", {}):
            if n not in names and not n.startswith("__"):
                names.append(n)
    if len(args) > len(names):
        raise TypeError(f"{cls.__name__}() takes {len(names)} positional arguments but {len(args)} were given")
    values = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in values:
            raise TypeError(f"{cls.__name__}() got multiple values for argument {k!r}")
        values[k] = v
    fields = getattr(cls, "__dataclass_fields__", {})
    for n in names:
        if n in values:
            continue
        f = fields.get(n)
        factory = getattr(f, "default_factory", None) if f is not None else None
        if factory is not None and callable(factory):
            values[n] = factory()
        elif not hasattr(cls, n):
            raise TypeError(f"{cls.__name__}() missing required argument {n!r}")
    for k, v in values.items():
        object.__setattr__(self, k, v)  # frozen dataclasses too
    post = getattr(self, "__post_init__", None)
    if post is not None:  # the dataclass convention the library's config objects validate in
        post()


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
