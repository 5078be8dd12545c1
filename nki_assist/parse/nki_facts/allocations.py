"""Allocations: SBUF/PSUM/HBM tensors (`nl.ndarray`, `nl.zeros`, ..., direct allocation) and implicit load
tiles.

A collector: functions of the walker (`ex`, parse/nki_extract.py) that record one kind of fact.
"""

from __future__ import annotations

from .. import consts
from ..consts import ParDim, Tup
from ..nki_model import Allocation, Call
from . import shapes
from .common import _DIRECT_ALLOC, _Ctx, _make_alloc


def allocation(ex, call: Call, api: str, pos, kw, target, ctx: _Ctx) -> Allocation | None:
    f = ex.folder.fold
    like = api.endswith("_like")
    shape_vals: tuple | None = None
    if like:
        src = pos[0] if pos else kw.get("a")
        if src is not None:
            _, shape_vals, dt_like, buf_like, _ = shapes.region(ex, src, ctx)
    else:
        sn = pos[0] if pos else kw.get("shape")
        sv = f(sn, ctx.env) if sn is not None else None
        if isinstance(sv, Tup):
            shape_vals = sv.items
        elif sv is not None:
            shape_vals = (sv,)
    dt_idx = 2 if api == "nl.full" else 1
    dnode = kw.get("dtype") or (pos[dt_idx] if len(pos) > dt_idx and not like else None)
    dtype = consts.canonical_dtype(f(dnode, ctx.env)) if dnode is not None else None
    if dtype is None and like and pos:
        dtype = dt_like
    bnode = kw.get("buffer")
    if bnode is not None:
        buffer = consts.canonical_buffer(f(bnode, ctx.env)) or "unknown"
        if buffer == "unknown":  # direct allocation: `ncc.psum.mod_alloc(...)`, `nki.compiler.sbuf.alloc(fn)`
            direct = _DIRECT_ALLOC.match(ex.text(bnode))
            buffer = direct.group(1) if direct else buffer
    else:
        buffer = "sbuf"
    pdim = None
    if shape_vals is not None:
        pdim = next((i for i, d in enumerate(shape_vals) if isinstance(d, ParDim)), None)
        if pdim is None and buffer in ("sbuf", "psum", "unknown"):
            pdim = 0
        shape_vals = tuple(d.value if isinstance(d, ParDim) else d for d in shape_vals)
    line, col, end_line, end_col = call.line, call.col, call.end_line, call.end_col
    a = _make_alloc(target, line, col, end_line, end_col, api, shape_vals, dtype, buffer, pdim, ctx)
    ctx.kernel.allocations.append(a)
    return a


def implicit_load(ex, call: Call, kw, target: str, ctx: _Ctx) -> None:
    shape_vals = call._src_shape_vals  # type: ignore[attr-defined]
    src = call.operand("src")
    dtype = consts.canonical_dtype(ex.folder.fold(kw["dtype"], ctx.env)) if "dtype" in kw else None
    dtype = dtype or (src.dtype if src else None)
    if shape_vals is None:
        return
    a = _make_alloc(target, call.line, call.col, call.end_line, call.end_col, call.api, shape_vals, dtype,
                    "sbuf", 0, ctx, implicit=True)
    ctx.kernel.allocations.append(a)
