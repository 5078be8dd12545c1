"""Reductions the engines cannot execute: a reduction over the partition axis (NKI210)."""

from __future__ import annotations

import re

from ..hardware import Target
from ..parse.nki_model import NkiFile
from .nki_common import check, emit, shape_str

# api -> index of `axis` among positional arguments (dst-style calls shift it by one)
_AXIS_POS = {"nl.sum": 1, "nl.max": 1, "nl.min": 1, "nl.mean": 1, "nl.prod": 1, "nl.all": 1, "nl.any": 1,
             "nl.var": 1, "nisa.tensor_reduce": 2}
_ZERO = re.compile(r"^[\(\[]?\s*0\s*(,|[\)\]]|$)|[\(\[,]\s*0\s*(,|[\)\]])")


def _axis_text(c) -> str | None:
    if "axis" in c.kwargs:
        return c.kwargs["axis"]
    pos = _AXIS_POS[c.api] + (1 if c.dst_style and c.api.startswith("nisa.") else 0)
    return c.args[pos] if len(c.args) > pos else None


@check("NKI210")
def partition_axis_reduction(nf: NkiFile, t: Target):
    for k in nf.kernels:
        for c in k.calls:
            if c.api not in _AXIS_POS:
                continue
            axis = _axis_text(c)
            if axis is None or not _ZERO.search(axis.strip()):
                continue
            data = c.operand("data", "x")
            if data is not None and (data.buffer in ("hbm", "shared_hbm", "private_hbm") or data.partitions == 1):
                continue  # an HBM tensor is not a tile; one partition has nothing to combine
            if data is not None and data.shape is not None and len(data.shape) < 2:
                continue
            shape = list(data.shape) if data is not None and data.shape is not None else None
            yield emit("NKI210", nf, c.line, c.col, c.end_line, c.end_col,
                       f"`{c.api}` reduces over axis {axis.strip()} (the partition axis)"
                       + (f" of a {shape_str(data.shape)} tile" if shape else "")
                       + ": Vector Engine reductions run along free axes only, so this does not compile.",
                       {"api": c.api, "axis": axis.strip(), "shape": shape},
                       fix="Sum across partitions with a matmul into PSUM: a [P, 1] ones tile as the stationary "
                           "operand against the tile, or transpose first and reduce along the free axis.")
