"""Error anatomy: which elements of a failing output are wrong, and the shape of the error in words and numbers.

For one output of one failing size (kernel values `a`, reference `e`, the tolerance's wrong mask) it measures:
per axis, the wrong index set as ranges and as 128-row tiles (first tile right, last tile wrong, every k-th
index right); value relations over the wrong elements (unwritten zeros, NaN/Inf, a constant ratio or offset, a
sign flip, values that equal the reference at other indices along an axis and the index map that fits them); and
`contrast` says what differs between the failing size's dimensions and the passing sizes' (a dimension that
became > 1, a tile count that became > 1, a remainder that stopped being 0, two dims that stopped being equal).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

TILE = 128  # partition tile: the unit port loops step by
MAX_MAP = 4096  # slices compared per axis when looking for a permutation


@dataclass
class AxisPattern:
    axis: int
    size: int
    wrong: list[tuple[int, int]]  # wrong index ranges [start, stop)
    tiles_wrong: list[int]  # 128-index tiles holding a wrong element
    tiles: int
    period: int | None = None  # every `period`-th index (from `phase`) is right, the rest wrong
    phase: int | None = None

    def text(self) -> str:
        rng = ", ".join(f"{a}..{b - 1}" if b - a > 1 else str(a) for a, b in self.wrong[:4])
        more = f" (+{len(self.wrong) - 4} more ranges)" if len(self.wrong) > 4 else ""
        out = f"axis {self.axis} (size {self.size}): wrong {rng}{more}"
        if self.tiles > 1:
            right = [t for t in range(self.tiles) if t not in self.tiles_wrong]
            out += f"; tiles of {TILE}: {_tile_words(right, self.tiles_wrong, self.tiles)}"
        if self.period:
            out += f"; every {self.period}th index from {self.phase} is right"
        return out


@dataclass
class OutputAnatomy:
    size: str
    output: int
    shape: tuple[int, ...]
    wrong: int
    elements: int
    axes: list[AxisPattern] = field(default_factory=list)
    relation: str | None = None  # unwritten | nonfinite | ratio | offset | sign | permutation | precision | mixed
    ratio: float | None = None
    offset: float | None = None
    mapping: dict[str, Any] | None = None  # axis, pairs [(wrong index, reference index)], fitted formula
    unwritten: int = 0  # wrong elements no store wrote (provenance) or holding exact zeros
    nonfinite: int = 0
    max_rel: float | None = None
    first_wrong: tuple[int, ...] | None = None
    first_right: tuple[int, ...] | None = None
    per_row: bool = False  # the offset is constant along the last axis, different per row

    @property
    def summary(self) -> str:
        words = [f"output {self.output} at size {self.size}: {self.wrong} of {self.elements} elements wrong"]
        words += [a.text() for a in self.axes if a.wrong and not (len(a.wrong) == 1 and a.wrong[0] == (0, a.size))]
        rel = self.relation_text()
        if rel:
            words.append(rel)
        return "; ".join(words)

    def relation_text(self) -> str | None:
        r = self.relation
        if r == "unwritten":
            return f"{self.unwritten} wrong elements were never written (zeros / no store)"
        if r == "nonfinite":
            return f"{self.nonfinite} wrong elements are NaN/Inf"
        if r == "ratio":
            return f"kernel / reference = {self.ratio:.6g} on every wrong element"
        if r == "offset" and self.per_row:
            return "kernel - reference is constant along each row (one offset per row: a per-row statistic is off)"
        if r == "offset":
            return f"kernel - reference = {self.offset:.6g} on every wrong element"
        if r == "sign":
            return "kernel = -reference on every wrong element (sign flip)"
        if r == "permutation":
            return f"wrong values equal the reference at other indices: {_map_text(self.mapping)}"
        if r == "precision":
            return f"small relative error (max {self.max_rel or 0:.3g}); fp32 storage passes"
        return None

    def to_json(self) -> dict[str, Any]:
        return {"size": self.size, "output": self.output, "shape": list(self.shape), "wrong": self.wrong,
                "elements": self.elements, "relation": self.relation, "ratio": self.ratio, "offset": self.offset,
                "mapping": self.mapping, "unwritten": self.unwritten, "nonfinite": self.nonfinite,
                "axes": [{"axis": a.axis, "size": a.size, "wrong": [list(r) for r in a.wrong[:16]],
                          "wrong_ranges": len(a.wrong),
                          "tiles_wrong": a.tiles_wrong, "tiles": a.tiles, "period": a.period, "phase": a.phase}
                         for a in self.axes],
                "first_wrong": list(self.first_wrong) if self.first_wrong else None,
                "first_right": list(self.first_right) if self.first_right else None, "summary": self.summary}


def _tile_words(right: list[int], wrong: list[int], n: int) -> str:
    if not right:
        return f"all {n} tiles wrong"
    if wrong == [n - 1]:
        return f"only the last tile ({n - 1}) wrong"
    if right == list(range(len(right))):
        return f"first {len(right)} tile(s) right, tiles {wrong[0]}..{wrong[-1]} wrong"
    return f"tiles {wrong} wrong, {right} right"


def _ranges(idx: np.ndarray) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for i in idx.tolist():
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def _period(wrong_any: np.ndarray) -> tuple[int | None, int | None]:
    """An index set where exactly every k-th index is right (k > 1): k and its first right index."""
    right = np.flatnonzero(~wrong_any)
    n = wrong_any.size
    if right.size < 2 or right.size == n:
        return None, None
    steps = np.diff(right)
    k = int(steps[0])
    if k > 1 and (steps == k).all() and int(right[0]) < k and right.size == len(range(int(right[0]), n, k)):
        return k, int(right[0])
    return None, None


def _axis(bad: np.ndarray, axis: int) -> AxisPattern:
    other = tuple(i for i in range(bad.ndim) if i != axis)
    hit = bad.any(axis=other) if other else bad
    n = bad.shape[axis]
    tiles = -(-n // TILE)
    tw = sorted({int(i) // TILE for i in np.flatnonzero(hit)})
    period, phase = _period(hit)
    return AxisPattern(axis, n, _ranges(np.flatnonzero(hit)), tw, tiles, period, phase)


def _fit_map(pairs: list[tuple[int, int]], n: int) -> str | None:
    """A formula j = f(i) that every (i, j) pair satisfies: a shift, i mod m, i // g, or i * k."""
    if not pairs:
        return None
    i = np.array([p[0] for p in pairs])
    j = np.array([p[1] for p in pairs])
    d = j - i
    if (d == d[0]).all():
        return f"i {'+' if d[0] >= 0 else '-'} {abs(int(d[0]))}"
    for m in (2, 4, 8, 16, 32, 64, 128, 256, 512):
        if m < n and (j == i % m).all():
            return f"i % {m}"
    for g in (2, 3, 4, 8, 16):
        if (j == i // g).all():
            return f"i // {g}"
    for k in (2, 3, 4, 8):
        if (j == (i * k) % n).all():
            return f"(i * {k}) % {n}"
    return None


def _map_text(m: dict[str, Any] | None) -> str:
    if not m:
        return "no mapping found"
    pairs = ", ".join(f"{a}->{b}" for a, b in m["pairs"][:4])
    fit = f" (reference index = {m['formula']})" if m.get("formula") else ""
    return f"along axis {m['axis']}, wrong index -> reference index {pairs}{fit}"


def _mapping(a: np.ndarray, e: np.ndarray, bad: np.ndarray, rtol: float, atol: float) -> dict[str, Any] | None:
    """Along each axis, whether every wrong slice equals the reference's slice at another index."""
    for axis in range(a.ndim):
        n = a.shape[axis]
        if n < 2 or n > MAX_MAP:
            continue
        other = tuple(i for i in range(a.ndim) if i != axis)
        wrong = np.flatnonzero(bad.any(axis=other) if other else bad)
        if wrong.size == 0 or wrong.size == n and n > 512:
            continue
        am, em = np.moveaxis(a, axis, 0).reshape(n, -1), np.moveaxis(e, axis, 0).reshape(n, -1)
        keys = np.round(em.sum(axis=1), 6)
        pairs = []
        for i in wrong[:256]:
            key = round(float(am[i].sum()), 6)
            cand = np.flatnonzero(np.abs(keys - key) <= atol * am.shape[1] + rtol * abs(key) + 1e-9)
            hit = next((int(j) for j in cand if j != i and np.allclose(am[i], em[j], rtol=rtol, atol=atol)), None)
            if hit is None:
                break
            pairs.append((int(i), hit))
        else:
            if pairs:
                return {"axis": axis, "pairs": pairs[:16], "formula": _fit_map(pairs, n), "count": len(pairs)}
    return None


def anatomy(a: np.ndarray, e: np.ndarray, *, rtol: float, atol: float, size: str, output: int,
            unwritten_mask: np.ndarray | None = None, fp32_passes: bool = False) -> OutputAnatomy | None:
    """The anatomy of one output; None when it has no wrong element or the shapes differ."""
    a = np.asarray(a).astype(np.float64)
    e = np.asarray(e).astype(np.float64)
    if a.shape != e.shape or not a.size:
        return None
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        ok = (np.abs(a - e) <= atol + rtol * np.abs(e)) | (np.isnan(a) & np.isnan(e)) | (np.isinf(a) & (a == e))
    bad = ~ok
    if not bad.any():
        return None
    an = OutputAnatomy(size, output, a.shape, int(bad.sum()), int(a.size))
    an.first_wrong = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), a.shape))
    if ok.any():
        an.first_right = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(ok.ravel())[0]), a.shape))
    an.axes = [_axis(bad, d) for d in range(a.ndim)]
    aw, ew = a[bad], e[bad]
    an.nonfinite = int((~np.isfinite(aw)).sum())
    zero = (aw == 0) & (ew != 0)
    if unwritten_mask is not None and unwritten_mask.shape == bad.shape:
        zero |= unwritten_mask[bad]
    an.unwritten = int(zero.sum())
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        rel = np.abs(aw - ew) / np.maximum(np.abs(ew), atol)
    an.max_rel = float(np.nanmax(rel)) if np.isfinite(rel).any() else None
    an.relation = _relation(an, a, e, bad, aw, ew, rtol, atol, fp32_passes)
    return an


def _relation(an: OutputAnatomy, a, e, bad, aw, ew, rtol, atol, fp32_passes) -> str:
    if an.unwritten >= 0.9 * an.wrong:  # before NaN: the simulator fills never-written memory with NaN
        return "unwritten"
    if an.nonfinite and an.nonfinite >= 0.5 * an.wrong:
        return "nonfinite"
    fin = np.isfinite(aw)
    nz = fin & (np.abs(ew) > 10 * atol)
    if nz.sum() >= 2:
        r = aw[nz] / ew[nz]
        med = float(np.median(r))
        if np.allclose(r, med, rtol=max(10 * rtol, 1e-3), atol=0) and abs(med - 1) > 10 * rtol:
            if abs(med + 1) <= 10 * rtol:
                return "sign"
            an.ratio = med
            return "ratio"
    d = aw[fin] - ew[fin]
    if d.size >= 2 and np.allclose(d, float(np.median(d)), rtol=0, atol=max(atol, 1e-6)):
        an.offset = float(np.median(d))
        return "offset"
    if a.ndim >= 2 and a.shape[-1] > 1 and np.isfinite(a).all():  # one offset per row: a statistic that is off
        rows = (a - e)[..., :1]
        if np.allclose(a - e, rows, rtol=0, atol=max(atol, 1e-6) + rtol * float(np.abs(e).max())):
            an.offset = None
            an.per_row = True
            return "offset"
    if fp32_passes:  # fp32 storage passes: rounding, whatever pattern the few wrong values show
        return "precision"
    m = _mapping(a, e, bad, rtol, atol)
    if m and m["count"] >= 2:  # one coinciding slice is no mapping
        an.mapping = m
        return "permutation"
    return "mixed"


@dataclass
class Contrast:
    """What differs between a failing size and the passing sizes: each item a phrase plus the names involved."""

    items: list[tuple[str, list[str]]] = field(default_factory=list)

    def text(self) -> str:
        return "; ".join(t for t, _ in self.items)

    @property
    def names(self) -> set[str]:
        return {n for _, ns in self.items for n in ns}


def contrast(failing: dict[str, int], passing: list[dict[str, int]]) -> Contrast:
    """Dimension facts true at every passing size and false at the failing one."""
    out = Contrast()
    if not passing:
        return out
    for k, v in failing.items():
        vals = [p.get(k) for p in passing if isinstance(p.get(k), int)]
        if not vals:
            continue
        if all(x == 1 for x in vals) and v > 1:
            out.items.append((f"{k} = {v} > 1 (1 in the passing sizes)", [k]))
        if all(x <= TILE for x in vals) and v > TILE:
            out.items.append((f"{k} = {v} spans {-(-v // TILE)} tiles of {TILE} (one tile in the passing sizes)",
                              [k]))
        if all(x % TILE == 0 for x in vals) and v % TILE:
            out.items.append((f"{k} % {TILE} = {v % TILE} (0 in the passing sizes)", [k]))
        if all(x % TILE for x in vals) and v % TILE == 0 and v:
            out.items.append((f"{k} % {TILE} = 0 (non-zero in the passing sizes)", [k]))
    keys = sorted(failing)
    for i, k in enumerate(keys):
        for m in keys[i + 1:]:
            same = [p.get(k) == p.get(m) for p in passing if k in p and m in p]
            if same and all(same) and failing[k] != failing[m]:
                out.items.append((f"{k} = {failing[k]} and {m} = {failing[m]} differ (equal in the passing sizes)",
                                  [k, m]))
    return out
