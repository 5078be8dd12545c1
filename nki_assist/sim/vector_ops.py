"""Vector and GpSimd engine instructions outside the elementwise core: select, memset, iota (an arange
expression or an access pattern) and batch-norm statistics (bn_stats, bn_aggr)."""

from __future__ import annotations

import numpy as np

from . import unwritten
from .access import read, tile_mask
from .context import UnsupportedAPI
from .core import F32, check_placement, ctx_site, emit, fvals, is_tensor, on_chip_operand
from .dtypes import FLOAT32, resolve
from .indexing import Idx, Mask
from .tensor import SimShapeError, Tensor


def select(pred, on_true, on_false, *, dst=None, dtype=None, mask=None, label="select", engine="vector"):
    ctx, line, depth = ctx_site()
    with unwritten.collect() as poison:
        if isinstance(pred, Mask):
            c = pred.arr
        else:
            c = read(pred, None, line) != 0
        srcs = [x for x in (pred, on_true, on_false) if is_tensor(x)]
        vt = fvals(on_true, None, line) if is_tensor(on_true) else F32(on_true)
        vf = fvals(on_false, None, line) if is_tensor(on_false) else F32(on_false)
    r = np.where(c, vt, vf).astype(F32)
    dt = dtype or (on_true.st.dt if is_tensor(on_true) else FLOAT32)
    out = emit(ctx, label, engine, line, depth, r, dst=dst, dtype=dt, srcs=srcs, mask=mask,
               src_storages=tuple(x.st for x in srcs))
    if poison:
        unwritten.select(out, poison, np.broadcast_to(c, r.shape), on_true, on_false)
    return out


# -- memset / iota / selects -----------------------------------------------------------------------
def memset(value, *, dst=None, shape=None, dtype=None, mask=None, engine="vector") -> Tensor:
    ctx, line, depth = ctx_site()
    shp = dst.shape if dst is not None else tuple(shape)
    if dst is not None and not ctx.legacy:
        dt = dst.st.dt
        if (isinstance(value, float) and not dt.is_float):
            ctx.report("SIM107", line, f"memset of {value!r} into a {dt.name} tile: the value's dtype must match "
                       "the destination (0.3+).", value=value, dtype=dt.name)
    out_dt = dst.st.dt if dst is not None else resolve(dtype if dtype is not None else FLOAT32)
    r = np.full(shp, value, dtype=F32 if out_dt.is_float else np.int64)
    return emit(ctx, "memset", engine, line, depth, r, dst=dst, dtype=dtype or FLOAT32, srcs=[], mask=mask)


def iota_expr(expr, dtype, mask=None, dst=None) -> Tensor:
    ctx, line, depth = ctx_site()

    if not isinstance(expr, Idx):
        raise UnsupportedAPI("nisa.iota with a non-nl.arange expression")
    vals = expr.values()
    if expr.space is not None and len(expr.space) == vals.ndim:  # an mgrid expression fills the whole grid
        vals = np.broadcast_to(vals, expr.space)
    if dst is not None and dst.st.buffer == "psum":
        check_placement(ctx, line, "iota", dst, ("sbuf",), "dst")
    return emit(ctx, "iota", "gpsimd", line, depth, vals.astype(np.int64), dst=dst, dtype=dtype or "int32",
                srcs=[], mask=mask)


def pattern_values(shape, pattern, offset=0, channel_multiplier=0) -> np.ndarray:
    """offset + p * channel_multiplier + sum(step_k * i_k) over a [[step, num], ...] access pattern."""
    P = shape[0]
    nums = [int(n) for _, n in pattern]
    out = np.full([P] + nums, offset, dtype=np.int64)
    out += (np.arange(P, dtype=np.int64) * channel_multiplier).reshape([P] + [1] * len(nums))
    for k, (step, n) in enumerate(pattern):
        shp = [1] * (len(nums) + 1)
        shp[k + 1] = int(n)
        out += (np.arange(int(n), dtype=np.int64) * int(step)).reshape(shp)
    return out.reshape(P, -1)


def iota_pattern(dst, pattern, offset=0, channel_multiplier=0) -> Tensor:
    ctx, line, depth = ctx_site()
    if dst.st.buffer == "psum":
        check_placement(ctx, line, "iota", dst, ("sbuf",), "dst")
    vals = pattern_values(dst.shape, pattern, offset, channel_multiplier)
    return emit(ctx, "iota", "gpsimd", line, depth, vals, dst=dst, dtype=None, srcs=[])


# -- statistics ------------------------------------------------------------------------------------
def bn_stats(data, *, dst=None, dtype=None, mask=None) -> Tensor:
    """Per-partition statistics of one chunk (free size <= bn_stats_fmax), 6 values per partition.

    The hardware layout is not published; the simulator stores (count, mean, M2) of the two halves of the
    chunk, which bn_aggr merges exactly (Chan et al.). `mask=` selects the input elements (a free-axis mask
    trims a ragged last chunk; a partition mask leaves the other partitions' statistics unwritten).
    """
    ctx, line, depth = ctx_site()
    tgt = ctx.target
    on_chip_operand(ctx, line, "bn_stats", data)
    m = tile_mask(mask, tuple(data.shape)) if mask is not None else None
    with unwritten.collect() as poison:
        v = np.nan_to_num(fvals(data, m, line))  # masked-off elements are not read
    P = v.shape[0]
    v2 = v.reshape(P, -1).astype(np.float64)
    F = v2.shape[1]
    w = np.ones(v2.shape, bool) if m is None else np.asarray(m).reshape(P, -1)
    if F > tgt.bn_stats_fmax:
        ctx.report("SIM105", line, f"bn_stats over {F} elements per partition; the Vector Engine handles at most "
                   f"{tgt.bn_stats_fmax} (nl.tile_size.bn_stats_fmax) per instruction.", free=F,
                   limit=tgt.bn_stats_fmax)
    h = F // 2
    out = np.zeros((P, 6), np.float64)
    for j, (part, pw) in enumerate(((v2[:, :h], w[:, :h]), (v2[:, h:], w[:, h:]))):
        n = pw.sum(axis=1)
        if part.shape[1]:
            mean = np.where(pw, part, 0.0).sum(axis=1) / np.maximum(n, 1)
            out[:, 3 * j] = n
            out[:, 3 * j + 1] = mean
            out[:, 3 * j + 2] = np.where(pw, (part - mean[:, None]) ** 2, 0.0).sum(axis=1)
    res = emit(ctx, "bn_stats", "vector", line, depth, out.astype(F32), dst=dst, dtype=dtype or FLOAT32,
               srcs=[data], src_storages=(data.st,), mask=_rows_mask(w, 6))
    if poison:
        unwritten.reduction(res, poison, tuple(data.shape), unwritten.free_axes(data.shape), m)
    return res


def _rows_mask(active: np.ndarray, width: int) -> np.ndarray | None:
    """Output mask of a per-partition statistic: the partitions with at least one active input element."""
    rows = active.any(axis=1)
    return None if rows.all() else np.broadcast_to(rows[:, None], (active.shape[0], width))


def bn_aggr(data, *, dst=None, dtype=None, mask=None) -> Tensor:
    """Merge bn_stats groups -> [P, 2] (mean, population variance)."""
    ctx, line, depth = ctx_site()
    m = tile_mask(mask, tuple(data.shape)) if mask is not None else None
    with unwritten.collect() as poison:
        v = np.nan_to_num(fvals(data, m, line).astype(np.float64))
    P = v.shape[0]
    g = v.reshape(P, -1)
    if g.shape[1] % 3:
        raise SimShapeError(f"bn_aggr input has {g.shape[1]} values per partition; expected a multiple of 6 "
                            "(bn_stats outputs)")
    w = np.ones(g.shape, bool) if m is None else np.asarray(m).reshape(P, -1)
    g = g.reshape(P, -1, 3)
    n = g[..., 0] * w.reshape(P, -1, 3).all(axis=2)  # a masked-off group counts nothing
    mean, m2 = g[..., 1], g[..., 2]
    tot = n.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = (n * mean).sum(axis=1) / tot
        var = ((m2 * (n > 0)).sum(axis=1) + (n * (mean - mu[:, None]) ** 2).sum(axis=1)) / tot
    r = np.stack([mu, var], axis=1).astype(F32)
    res = emit(ctx, "bn_aggr", "vector", line, depth, r, dst=dst, dtype=dtype or FLOAT32, srcs=[data],
               src_storages=(data.st,), mask=_rows_mask(w, 2))
    if poison:
        unwritten.reduction(res, poison, tuple(data.shape), unwritten.free_axes(data.shape), m)
    return res
