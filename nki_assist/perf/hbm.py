"""HBM traffic accounting: bytes moved vs unique bytes touched (union of the DMA boxes)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..contracts.runs import TraceEntry

_MAX_CELLS = 4_000_000  # coordinate-compressed grid cap; beyond it, fall back to deduplicated boxes

Box = tuple[tuple[int, int], ...]


def _volume(box: Box) -> int:
    v = 1
    for a, b in box:
        v *= b - a if b > a else 0
    return v


def union_volume(boxes: list[Box]) -> tuple[int, bool]:
    """Elements covered by the union of boxes; (volume, exact)."""
    uniq = [b for b in set(boxes) if b and _volume(b) > 0]
    if not uniq:
        return 0, True
    ndim = len(uniq[0])
    if any(len(b) != ndim for b in uniq):
        return sum(_volume(b) for b in uniq), False
    if len(uniq) == 1:
        return _volume(uniq[0]), True
    breaks = [sorted({x for b in uniq for x in b[d]}) for d in range(ndim)]
    cells = math.prod(len(br) - 1 for br in breaks)
    if cells <= 0 or cells > _MAX_CELLS:
        bbox = tuple((min(b[d][0] for b in uniq), max(b[d][1] for b in uniq)) for d in range(ndim))
        return min(sum(_volume(b) for b in uniq), _volume(bbox)), False
    grid = np.zeros([len(br) - 1 for br in breaks], dtype=bool)
    index = [{x: i for i, x in enumerate(br)} for br in breaks]
    for b in uniq:
        grid[tuple(slice(index[d][b[d][0]], index[d][b[d][1]]) for d in range(ndim))] = True
    widths = [np.diff(np.asarray(br, dtype=np.int64)) for br in breaks]
    weight = widths[0]
    for w in widths[1:]:
        weight = np.multiply.outer(weight, w)
    return int(weight[grid].sum()), True


@dataclass
class HbmTraffic:
    read_bytes: int = 0
    write_bytes: int = 0
    unique_read_bytes: int = 0
    unique_write_bytes: int = 0
    exact: bool = True
    boxed: bool = True  # every DMA carried an HBM box
    read_by_line: dict[int | None, int] = field(default_factory=dict)
    unique_read_by_line: dict[int | None, int] = field(default_factory=dict)

    @property
    def reload_bytes(self) -> int:
        return max(0, self.read_bytes - self.unique_read_bytes)

    @property
    def redundancy(self) -> float:
        return self.read_bytes / self.unique_read_bytes if self.unique_read_bytes else 1.0


def account(entries: list[TraceEntry], reads: dict[int, int], writes: dict[int, int]) -> HbmTraffic:
    """`reads`/`writes` map trace seq -> HBM bytes (from the cost pass)."""
    t = HbmTraffic()
    rboxes: dict[str, list[Box]] = defaultdict(list)
    wboxes: dict[str, list[Box]] = defaultdict(list)
    rsize: dict[str, float] = {}
    wsize: dict[str, float] = {}
    line_boxes: dict[tuple[int | None, str], list[Box]] = defaultdict(list)
    unboxed_read = unboxed_write = 0
    for e in entries:
        r, w = reads.get(e.seq, 0), writes.get(e.seq, 0)
        if not (r or w):
            continue
        t.read_bytes += r
        t.write_bytes += w
        if r:
            t.read_by_line[e.line] = t.read_by_line.get(e.line, 0) + r
        box = tuple((int(a), int(b)) for a, b in e.hbm_box) if e.hbm_box else None
        vol = _volume(box) if box else 0
        if vol <= 0 or e.hbm_tensor is None:
            t.boxed = False
            unboxed_read += r
            unboxed_write += w
            if r:
                t.unique_read_by_line[e.line] = t.unique_read_by_line.get(e.line, 0) + r
            continue
        # bytes per element of the HBM tensor (the box is the region touched; payload bytes count only the
        # masked-in elements, so their ratio is not a per-element size)
        per_elem = e.extra.get("hbm_elem_bytes") or (r or w) / vol
        if r:
            rboxes[e.hbm_tensor].append(box)
            rsize[e.hbm_tensor] = per_elem
            line_boxes[(e.line, e.hbm_tensor)].append(box)
        if w:
            wboxes[e.hbm_tensor].append(box)
            wsize[e.hbm_tensor] = per_elem
    for name, boxes in rboxes.items():
        vol, exact = union_volume(boxes)
        t.unique_read_bytes += int(vol * rsize[name])
        t.exact &= exact
    for name, boxes in wboxes.items():
        vol, exact = union_volume(boxes)
        t.unique_write_bytes += int(vol * wsize[name])
        t.exact &= exact
    for (line, name), boxes in line_boxes.items():
        vol, _ = union_volume(boxes)
        t.unique_read_by_line[line] = t.unique_read_by_line.get(line, 0) + int(vol * rsize[name])

    # Without boxes we cannot see reuse: count those bytes as unique (no redundancy claimed).
    t.unique_read_bytes += unboxed_read
    t.unique_write_bytes += unboxed_write
    return t
