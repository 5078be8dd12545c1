"""DMA: nl.load / nl.store / nisa.dma_copy / transposing loads, with the trace fields the cost model needs
(payload bytes, contiguous transfers, HBM tensor and box, direction)."""

from __future__ import annotations

import math

import numpy as np

from . import mathops, provenance, unwritten
from .core import (
    ON_CHIP,
    SimShapeError,
    Tensor,
    check_placement,
    consume,
    ctx_site,
    is_tensor,
    new_tile,
    opname,
    read,
    tile_mask,
    write,
)
from .dma_geometry import geometry
from .dtypes import resolve

F32 = np.float32


# -- DMA -------------------------------------------------------------------------------------------
def dma(dst: Tensor, src: Tensor, *, mask=None, op="dma_copy", accumulate_op=None, label=None,
        transpose_2d=False, axes=None) -> None:
    ctx, line, depth = ctx_site()
    if (src is dst or (src.st is dst.st and src.fancy is None and dst.fancy is None and src.desc == dst.desc)) \
            and accumulate_op is None and mask is None and not transpose_2d:
        return None  # a copy onto itself changes nothing (nki-library's "HBM fence" idiom): not a read of its data
    return dma_at(ctx, line, depth, dst, src, mask=mask, op=op, accumulate_op=accumulate_op,
                  transpose_2d=transpose_2d, label=label, axes=axes)


def dma_at(ctx, line, depth, dst, src, *, mask=None, op="dma_copy", accumulate_op=None, transpose_2d=False,
           label=None, value=None, axes=None):
    """Move src -> dst (element counts must match; dtype cast through fp32). `value` short-cuts the read."""
    label = label or op
    if src.st.buffer == "psum" and not ctx.legacy and dst.st.buffer != "psum":
        check_placement(ctx, line, label, src, ("sbuf", "hbm"), "source")
    if dst.st.buffer == "psum":
        check_placement(ctx, line, label, dst, ("sbuf", "hbm"), "destination")
    shape = dst.shape
    m = tile_mask(mask, shape) if mask is not None else None
    # on-chip destinations inherit unwritten source positions; a write to HBM reports them (unwritten.py)
    with unwritten.collect(not dst.st.buffer.endswith("hbm")) as poison:
        if value is None:
            src_shape = src.shape
            sm = m if (m is not None and src_shape == shape) else None
            if transpose_2d:
                sm = m.T if m is not None and m.T.shape == src_shape else None
            value = read(src, sm, line)
            if transpose_2d:
                if axes is not None and value.ndim == len(axes) and value.ndim > 2:
                    value = value.transpose(axes)  # nisa.dma_transpose: 3-d [2, 1, 0], 4-d [3, 1, 2, 0]
                else:
                    value = value.reshape(value.shape[0], -1).T
        old = read(dst, m, line) if accumulate_op is not None else None
    if value.shape != shape:
        if value.size != int(np.prod(shape)):
            raise SimShapeError(f"{label}: source {list(src.shape)} and destination {list(shape)} hold different "
                                "numbers of elements")
        value = value.reshape(shape)
    same = src.st.dt is dst.st.dt
    val = value if same else ctx.round(mathops.f32(value) if src.st.dt.is_float else value, dst.st.dt)
    if accumulate_op is not None:
        val = ctx.round(mathops.BINARY[opname(accumulate_op)](mathops.f32(old), mathops.f32(val)), dst.st.dt)
    write(dst, val, m, line)
    if poison:
        if transpose_2d:
            unwritten.transpose(dst, poison, tuple(src.shape))
        else:
            unwritten.elementwise(dst, poison)
    if ctx.sanitize:
        provenance.watch(ctx, line, op, dst, m, [src], value if src.st.dt.is_float else None)
    _dma_trace(ctx, line, depth, dst, src, m, op)


def _dma_trace(ctx, line, depth, dst, src, m, op, transpose=False):
    if not ctx.tracing:
        ctx.n_instr += 1
        return
    src_hbm, dst_hbm = src.st.buffer.endswith("hbm"), dst.st.buffer.endswith("hbm")
    hbm, chip = (src, dst) if src_hbm else (dst, src)
    direction = "load" if src_hbm and not dst_hbm else ("store" if dst_hbm and not src_hbm else "copy")
    extra = {}
    if hbm.st.buffer.endswith("hbm"):
        # the mask is in dst's shape; the HBM view is src for loads (transposed for transposing loads)
        hm = m
        if m is not None and tuple(m.shape) != tuple(hbm.shape):
            hm = m.T if m.T.shape == tuple(hbm.shape) else None
        on_chip = chip.st.buffer in ON_CHIP and not chip.st.buffer.endswith("hbm")
        g = geometry(hbm, hm, tuple(hbm.shape) if transpose else (tuple(chip.shape) if on_chip else None))
        n, parts, transfers, hbm_box = g.elements, g.partitions, g.transfers, g.box
        if on_chip and transpose:
            parts = chip.shape[0] if chip.shape else 1
        if not on_chip:
            parts = 1
        extra["hbm_elem_bytes"] = hbm.st.dt.itemsize
        if hbm_box is not None and all(b == (0, S) for b, S in zip(hbm_box, hbm.st.shape)):
            extra["whole_tensor"] = True  # moves all of its HBM tensor: no larger transfer of it exists
        name = hbm.st.name
    else:  # SBUF <-> SBUF
        n = int(np.count_nonzero(m)) if m is not None else math.prod(dst.shape)
        parts = chip.shape[0] if chip.shape and chip.st.buffer in ON_CHIP else 1
        transfers, hbm_box, name = max(parts, 1), None, None
    nbytes = n * hbm.st.dt.itemsize
    ctx.instr("dma", op, line, depth, dst, [src], partitions=parts, free_elems=n // max(parts, 1), bytes=nbytes,
              transfers=transfers, hbm_tensor=name, hbm_box=hbm_box, direction=direction, extra=extra)


def load(src: Tensor, *, dtype=None, mask=None, transpose_2d=False, op="dma_load") -> Tensor:
    ctx, line, depth = ctx_site()
    if not is_tensor(src):
        raise TypeError("nl.load expects an HBM tensor")
    if not src.st.buffer.endswith("hbm"):
        check_placement(ctx, line, "nl.load", src, ("hbm",), "source")
    shape = src.shape
    if transpose_2d:
        P = shape[0]
        shape = (int(np.prod(shape[1:])), P)
    dt = resolve(dtype) if dtype is not None else src.st.dt
    m = tile_mask(mask, shape) if mask is not None else None
    if m is None:
        sm = None
    else:
        sm = m.T if transpose_2d else m
    v = read(src, sm, line)
    if transpose_2d:
        v = v.reshape(v.shape[0], -1).T
    if m is None and dt is src.st.dt:
        out = new_tile(shape, dt, "sbuf", line, np.array(v, copy=True), rounded=True)
    else:
        out = new_tile(shape, dt, "sbuf", line, mathops.f32(v) if src.st.dt.is_float else v, m)
    out.origin = ("load", (src.st,), None, m)
    if ctx.sanitize:
        provenance.watch(ctx, line, op, out, m, [src], v if src.st.dt.is_float else None)
    _dma_trace(ctx, line, depth, out, src, m, op, transpose_2d)
    return out


def store(dst: Tensor, value, *, mask=None) -> None:
    if is_tensor(value) and value.fresh:
        consume(value)  # the op wrote straight into the tile the DMA reads; not an extra live tile
    ctx, line, depth = ctx_site()
    if not is_tensor(dst):
        raise TypeError("nl.store expects an HBM destination tensor")
    if not dst.st.buffer.endswith("hbm"):
        check_placement(ctx, line, "nl.store", dst, ("hbm",), "destination")
    if is_tensor(value):
        if value.st.buffer.endswith("hbm"):
            check_placement(ctx, line, "nl.store", value, ON_CHIP, "value")
        if value.st.buffer == "psum" and not ctx.legacy:
            check_placement(ctx, line, "nl.store", value, ("sbuf",), "value")
        dma_at(ctx, line, depth, dst, value, mask=mask, op="dma_store")
    else:
        v = np.broadcast_to(np.asarray(value, F32), dst.shape)
        m = tile_mask(mask, dst.shape) if mask is not None else None
        write(dst, ctx.round(v, dst.st.dt), m, line)
        if ctx.sanitize:
            provenance.watch(ctx, line, "dma_store", dst, m, [], v)
        ctx.instr("dma", "dma_store", line, depth, dst, [], direction="store")


def transpose_copy(src: Tensor, *, dtype=None, mask=None) -> Tensor:
    """Legacy `nisa.dma_transpose(src)`: a new SBUF tile holding src's 2-D transpose, moved by DMA."""
    if src.st.buffer.endswith("hbm"):
        return load(src, dtype=dtype, mask=mask, transpose_2d=True, op="dma_transpose")
    ctx, line, depth = ctx_site()
    P = src.shape[0]
    shape = (int(np.prod(src.shape[1:])), P)
    dt = resolve(dtype) if dtype is not None else src.st.dt
    out = new_tile(shape, dt, "sbuf", line, None)
    dma_at(ctx, line, depth, out, src, mask=mask, op="dma_transpose", transpose_2d=True)
    return out
