"""`nl` loops and launch-grid queries: affine/sequential/static/dynamic ranges (each iteration recorded for
the trace and the loop-carried-dependency checks), fori_loop, program ids, device_print, arange/ds."""

from __future__ import annotations

import operator

import numpy as np

from . import block_store, context
from .access import read
from .context import LoopFrame
from .indexing import DynSlice, Idx
from .tensor import Tensor, commit_pending, release


# -- loops -----------------------------------------------------------------------------------------
def _loop_gen(kind: str, r: range):
    ctx = context.current()
    frame = LoopFrame(kind=kind, uid=next(ctx.loop_uid), start_seq=next(ctx.alloc_seq), n=len(r))
    chain, last = ctx.last_chain, ctx.last_frame
    ln = ctx.line()
    frame.line, frame.owner = ln, id(ctx.last_frame)
    ctx.last_chain, ctx.last_frame = chain, last
    if ln is not None and ctx.loop_trips.get(ln, -1) < frame.n:  # value_ranges: steps behind a running sum
        ctx.loop_trips[ln] = frame.n
    ctx.loops.append(frame)
    try:
        for i, v in enumerate(r):
            frame.iter = i
            frame.value = v
            if kind == "affine":
                ctx.retag()
            yield v
            _end_iteration(ctx, frame)
    finally:
        if ctx.loops and ctx.loops[-1] is frame:
            ctx.loops.pop()
        elif frame in ctx.loops:
            ctx.loops.remove(frame)
        if kind == "affine":
            ctx.retag()


def _end_iteration(ctx, frame: LoopFrame) -> None:
    """Legacy scoping: tiles allocated inside a loop body are released when the iteration ends; blocks of
    block-dimension tiles that only this iteration used are dropped (block_store.py)."""
    if ctx.block_drops:
        block_store.end_iteration(ctx, frame)
    if frame.scope:
        commit_pending(ctx)
        for st in frame.scope:
            release(st)
        frame.scope = []


def _range_args(args) -> range:
    return range(*[operator.index(a) for a in args])


def affine_range(*args, **kw):
    ctx = context.current()
    return _loop_gen("affine" if ctx.legacy else "range", _range_args(args))


def sequential_range(*args, **kw):
    return _loop_gen("sequential", _range_args(args))


def static_range(*args, **kw):
    return _loop_gen("static", _range_args(args))


def dynamic_range(*args, **kw):
    return _loop_gen("sequential", _range_args(args))


def fori_loop(lower, upper, body_fun, *args, step=1, **kw):
    for i in _loop_gen("sequential", range(lower, upper, step)):
        body_fun(i, *args)


# -- grid ------------------------------------------------------------------------------------------
def program_id(axis=0):
    ctx = context.current()
    return ctx.pid[axis] if axis < len(ctx.pid) else 0


def num_programs(axes=0):
    ctx = context.current()
    if isinstance(axes, (tuple, list)):
        n = 1
        for a in axes:
            n *= ctx.grid[a] if a < len(ctx.grid) else 1
        return n
    return ctx.grid[axes] if axes < len(ctx.grid) else 1


def program_ndim():
    return len(context.current().grid)


def nc(n):
    return int(n)


def spmd_dim(*a, **k):
    """`nl.spmd_dim(grid_x, nl.nc(2))`: grid_x programs on each of 2 NeuronCores, grid_x * 2 along the axis."""
    n = 1
    for v in a:
        n *= int(v)
    return n


def device_print(prefix, x=None, *a, **k):
    ctx = context.current()
    line = ctx.line()
    if isinstance(x, Tensor):
        v = read(x, None, line)
        text = f"{prefix} {np.array2string(np.asarray(v, dtype=np.float64 if v.dtype.kind == 'f' else v.dtype), threshold=16, edgeitems=2)}"
    else:
        text = f"{prefix} {x!r}" if x is not None else str(prefix)
    if sum(1 for n in ctx.notes if n.startswith("device_print")) < 50:
        ctx.notes.append(f"device_print line {line}: {text}")


class _NoReorder:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def no_reorder(*a, **k):
    return _NoReorder()


def arange(*args):
    return Idx.arange(*[operator.index(a) for a in args])


def ds(start, size, step=1):
    return DynSlice(start, size, step)
