"""`tensor.ap(pattern=..., offset=..., vector_offset=..., scalar_offset=..., indirect_dim=...)` as a view.

NKI's access pattern addresses the tensor's storage as one row-major element stream: element
(i0, i1, ...) of the view is storage element `offset + sum(step_k * i_k)` (nki.language.NkiTensor: pattern
is a list of [step, num], offset an element offset). Indirect addressing (nki.isa.dma_copy docs) replaces
the partition term with a per-partition row index read from an SBUF tensor (`vector_offset`, shape (P, 1)),
or adds one dynamic row offset to every partition (`scalar_offset`, a 1x1 tensor or a register), rows
being counted along storage dimension `indirect_dim`. The view is a fancy-indexed Tensor, so every
instruction, the DMA geometry and the bounds checks read it like any other view.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from . import context
from .access import box, read
from .tensor import Tensor, register_ap


def _start(t: Tensor) -> int:
    """Flat storage offset of a view's first element (the view must be a plain affine slice)."""
    if t.fancy is not None:
        raise context.UnsupportedAPI("tensor.ap", ".ap() of a view that was itself built by indirect or "
                                     "transposing indexing", limit=True)
    strides = np.cumprod((t.st.shape[1:] + (1,))[::-1])[::-1]
    first = [e[0] if type(e) is tuple else e for e in t.desc]
    return int(sum(int(s) * int(f) for s, f in zip(strides, first)))


def _scalar(value, what: str) -> int:
    if isinstance(value, Tensor):
        data = read(value, None, None)
        if data.size != 1:
            raise context.UnsupportedAPI("tensor.ap", f"{what} of {data.size} elements (expected one)", limit=True)
        return int(np.asarray(data, np.float64).reshape(-1)[0])
    reg = getattr(value, "value", None)
    if reg is not None and not isinstance(value, (int, np.integer)):
        return int(reg)
    return operator.index(value)


def ap(t: Tensor, pattern=None, offset=0, dtype=None, vector_offset=None, scalar_offset=None, indirect_dim=0,
       **extra) -> Tensor:
    if extra:
        raise context.UnsupportedAPI("tensor.ap", f".ap({', '.join(extra)}=...)", limit=True)
    if dtype is not None and getattr(dtype, "name", str(dtype)) != t.st.dt.name:
        raise context.UnsupportedAPI("tensor.ap(dtype=...)", "reinterpreting the storage as another dtype",
                                     limit=True)
    if vector_offset is not None and scalar_offset is not None:
        raise ValueError("vector_offset and scalar_offset are mutually exclusive")
    shape_st = t.st.shape
    if pattern is None:
        pattern = []
        stride = 1
        for n in reversed(t.shape):
            pattern.insert(0, [stride, n])
            stride *= n
    pattern = [(operator.index(s), operator.index(n)) for s, n in pattern]
    if any(n < 0 for _, n in pattern):
        raise ValueError(f"access pattern {pattern} has a negative count")
    shape = tuple(n for _, n in pattern)
    flat = np.full(shape, _start(t) + operator.index(offset), dtype=np.int64)
    for k, (step, n) in enumerate(pattern):
        idx = np.arange(n, dtype=np.int64).reshape((n,) + (1,) * (len(shape) - k - 1))
        if k == 0 and vector_offset is not None:
            continue
        flat = flat + step * idx
    if not 0 <= operator.index(indirect_dim) < len(shape_st):
        raise IndexError(f"indirect_dim {indirect_dim} is not a dimension of a {len(shape_st)}-d tensor")
    row = math.prod(shape_st[operator.index(indirect_dim) + 1:])
    if vector_offset is not None:
        if not isinstance(vector_offset, Tensor):
            raise context.UnsupportedAPI("tensor.ap", "vector_offset that is not a tensor", limit=True)
        # an index tile [128, N] is read column by column (nki.isa.dma_transpose docs: indices.T.flatten())
        rows = np.asarray(read(vector_offset, None, None), np.float64).T.reshape(-1)
        if rows.size < shape[0]:
            raise IndexError(f"vector_offset has {rows.size} indices for {shape[0]} partitions")
        flat = flat + (rows[: shape[0]].astype(np.int64) * row).reshape((shape[0],) + (1,) * (len(shape) - 1))
    elif scalar_offset is not None:
        flat = flat + _scalar(scalar_offset, "scalar_offset") * row
    size = math.prod(shape_st)
    if flat.size and (flat.min() < 0 or flat.max() >= size):
        bad = int(flat.max() if flat.max() >= size else flat.min())
        if t.st.buffer.endswith("hbm"):
            raise IndexError(f".ap() addresses element {bad} of a tensor of {size} elements "
                         f"(shape {list(shape_st)}, pattern {[list(p) for p in pattern]}, offset {offset})")
        # on-chip: the partition step's meaning past the tile's own rows is not modelled; say so, never accuse
        raise context.UnsupportedAPI("tensor.ap", f"an on-chip .ap() reaching element {bad} outside its "
                                     f"{list(shape_st)} tile", limit=True)
    fancy = np.unravel_index(flat, shape_st)
    view = Tensor(t.st, None, fancy=tuple(np.asarray(a, np.int64) for a in fancy), shape=shape)
    box(view)  # validates the view's extent once, here, at the .ap() line
    return view


register_ap(ap)
