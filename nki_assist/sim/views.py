"""Where a tensor view lands in its storage: the numpy key, the in-bounds part, whether all of it is.

Below tensor.py so the sanitizer (provenance.py) can read views without importing the tensor module.
"""

from __future__ import annotations

import numpy as np

from . import block_store


def resolve(t):  # t: tensor.Tensor (duck-typed: this module sits below tensor.py)
    """(numpy key into storage, inner slices of the view that are in bounds or None, whole view valid)."""
    r = t._res
    if r is not None:
        return r
    st_shape = t.st.shape
    key = []
    inner = []
    ok = True
    empty = False
    if t.fancy is not None:
        valid = np.ones(t.shape, bool)
        clipped = []
        for a, S in zip(t.fancy, st_shape):
            valid &= (a >= 0) & (a < S)
            clipped.append(np.clip(a, 0, max(S - 1, 0)))
        ok = bool(valid.all())
        r = (tuple(clipped), valid, ok)
        t._res = r
        return r
    for e, S in zip(t.desc, st_shape):
        if type(e) is tuple:
            start, step, n = e
            i0 = -(start // step) if start < 0 else 0  # first i with start + step*i >= 0
            last_ok = (S - 1 - start) // step if S - 1 >= start else -1
            i1 = min(n, last_ok + 1)
            if i1 <= i0:
                i0 = i1 = 0
                empty = n > 0
            if i0 != 0 or i1 != n:
                ok = False
            key.append(slice(start + step * i0, start + step * (i1 - 1) + 1, step) if i1 > i0 else slice(0, 0))
            inner.append(slice(i0, i1))
        else:
            if not 0 <= e < S:
                ok = False
                empty = True
                key.append(0)
            else:
                key.append(e)
    r = (tuple(key), None if empty else tuple(inner), ok)
    t._res = r
    return r


def locate(t):
    """(storage that holds the view's values, key, inner, ok): the storage itself, or for a block-dimension
    tile the one block the view lies in (block_store.py); a view across blocks turns the tile into one array."""
    st = t.st
    if st.parts is not None:
        pv = block_store.part_view(t)
        if pv is not None:
            return (pv.st, *resolve(pv))
        block_store.densify(st)
    return (st, *resolve(t))
