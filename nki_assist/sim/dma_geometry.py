"""What one DMA really moves: bytes, active partitions, contiguous descriptors and the HBM region.

A DMA moves only the elements its mask keeps and that lie inside the tensor. A descriptor is one contiguous
HBM run that stays within one SBUF partition, so the count is the number of such runs among the moved
elements. The HBM box is the region actually touched (so unique-byte accounting is not diluted by masked-off
or out-of-bounds rows).

Plain (affine) views with no mask or a rectangular mask are counted analytically; transposing / non-affine
index grids and irregular masks are counted exactly from the element addresses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tensor import Tensor, resolve


@dataclass(frozen=True)
class DmaGeometry:
    elements: int  # elements moved
    partitions: int  # on-chip partitions that receive or send at least one element
    transfers: int  # contiguous descriptors (>= one per active partition)
    box: tuple[tuple[int, int], ...] | None  # HBM region touched, (start, stop) per storage dim


def _active(t: Tensor, m: np.ndarray | None) -> np.ndarray | None:
    """The elements of view `t` that move (mask and bounds), or None when all do."""
    _key, inner, ok = resolve(t)
    act = None
    if not ok:
        if t.fancy is not None:
            act = np.asarray(inner, bool)
        else:
            act = np.zeros(t.shape, bool)
            if inner is not None:
                act[inner] = True
    if m is not None:
        mm = np.broadcast_to(m, t.shape) if m.shape != tuple(t.shape) else m
        act = mm if act is None else (act & mm)
    return act


def _rectangle(act: np.ndarray) -> list[tuple[int, int]] | None:
    """Per-axis [start, stop) when the active set is exactly a box, else None."""
    spans = []
    for ax in range(act.ndim):
        p = act.any(axis=tuple(i for i in range(act.ndim) if i != ax))
        idx = np.flatnonzero(p)
        if idx.size == 0:
            return []
        a, b = int(idx[0]), int(idx[-1]) + 1
        if not p[a:b].all():
            return None
        spans.append((a, b))
    n = 1
    for a, b in spans:
        n *= b - a
    return spans if n == int(np.count_nonzero(act)) else None


def geometry(hbm: Tensor, m: np.ndarray | None, chip_shape: tuple | None) -> DmaGeometry:
    """Geometry of a DMA whose HBM side is the view `hbm` (in the order the chip side receives it);
    `m`: the mask in the HBM view's shape; `chip_shape`: the on-chip view's shape (None: HBM to HBM)."""
    shape = tuple(hbm.shape)
    act = _active(hbm, m)
    if hbm.fancy is None and (chip_shape is None or tuple(chip_shape) == shape):
        spans = [(0, n) for n in shape] if act is None else _rectangle(act)
        if spans == []:
            return DmaGeometry(0, 0, 0, None)
        if spans is not None:
            return _affine(hbm, spans, chip_shape is not None)
    return _exact(hbm, act, chip_shape)


def _affine(t: Tensor, spans: list[tuple[int, int]], on_chip: bool) -> DmaGeometry:
    """A box [a_d, b_d) of an affine view: descriptors merge inner axes while they cover whole storage rows."""
    st_shape = t.st.shape
    counts = [b - a for a, b in spans]
    elems = 1
    for c in counts:
        elems *= c
    parts = counts[0] if (on_chip and counts) else 1
    # contiguous run: from the innermost view axis outwards, never across the partition axis (view axis 0)
    run = 1
    vi = len(spans) - 1
    for e, S in zip(reversed(t.desc), reversed(st_shape)):
        if type(e) is not tuple:
            if S == 1:
                continue  # a fixed index into a size-1 dim does not break contiguity
            break
        if on_chip and vi == 0:
            break
        _start, step, _n = e
        c = counts[vi]
        vi -= 1
        if step != 1:
            break
        run *= max(c, 1)
        if c != S:
            break
    transfers = max(-(-elems // run), parts, 1) if elems else 0
    box = []
    vi = 0
    for e, S in zip(t.desc, st_shape):
        if type(e) is tuple:
            start, step, _n = e
            a, b = spans[vi]
            vi += 1
            lo, hi = start + step * a, start + step * (b - 1) + 1
            box.append((max(lo, 0), min(hi, S)))
        else:
            box.append((e, e + 1))
    return DmaGeometry(elems, parts, transfers, tuple(box))


def _exact(t: Tensor, act: np.ndarray | None, chip_shape: tuple | None) -> DmaGeometry:
    """Count runs from the element addresses (transposing or non-affine grids, irregular masks)."""
    key, _inner, _ok = resolve(t)
    st_shape = t.st.shape
    if t.fancy is not None:
        coords = [np.asarray(a) for a in key]  # already clipped; out-of-bounds elements are not active
    else:
        coords = []
        vi = 0
        for e in t.desc:
            if type(e) is tuple:
                start, step, n = e
                shp = [1] * len(t.shape)
                shp[vi] = n
                coords.append(start + step * np.arange(n).reshape(shp))
                vi += 1
            else:
                coords.append(np.asarray(e))
        coords = [np.broadcast_to(c, t.shape) for c in coords]
    coords = [np.clip(c, 0, max(S - 1, 0)) for c, S in zip(coords, st_shape)]
    addr = np.ravel_multi_index(tuple(coords), st_shape) if st_shape else np.zeros(t.shape, np.int64)
    addr = np.broadcast_to(addr, t.shape).reshape(-1)
    keep = np.ones(addr.shape, bool) if act is None else np.broadcast_to(act, t.shape).reshape(-1)
    n = int(np.count_nonzero(keep))
    if n == 0:
        return DmaGeometry(0, 0, 0, None)
    total = addr.size
    if chip_shape is not None and len(chip_shape) and chip_shape[0]:
        P = int(chip_shape[0])
        part = np.arange(total) // max(total // P, 1)
    else:
        part = np.zeros(total, np.int64)
    a, p = addr[keep], part[keep]
    breaks = np.count_nonzero((np.diff(a) != 1) | (np.diff(p) != 0))
    parts = int(np.unique(p).size) if chip_shape is not None else 1
    sel = [np.broadcast_to(c, t.shape).reshape(-1)[keep] for c in coords]
    box = tuple((int(c.min()), int(c.max()) + 1) for c in sel)
    return DmaGeometry(n, parts, int(breaks) + 1, box)
