"""Vector Engine instructions beyond the core set: `tensor_scalar_reduce` and `tensor_tensor_scan`.

Both are documented ISA (nki.isa.tensor_scalar_reduce, nki.isa.tensor_tensor_scan) and used by AWS's public
kernels (flash attention, fused Mamba). Semantics follow the ISA docstrings:
- tensor_scalar_reduce: out = data op0 operand0; reduce_res[p] = reduce_op over the free axis of out.
- tensor_tensor_scan, per partition:  r[:, 0] = op1(op0(data0[:, 0], initial), data1[:, 0]);
  r[:, i] = op1(op0(data0[:, i], r[:, i-1]), data1[:, i]).
"""

from __future__ import annotations

import numpy as np

from . import mathops, unwritten
from .access import write
from .core import (
    SimShapeError,
    _fit,
    ctx_site,
    emit,
    fvals,
    is_tensor,
    on_chip_operand,
    operand_value,
    opname,
    palign,
    tile_mask,
)

F32 = np.float32


def tensor_scalar_reduce(data, op0, operand0, reduce_op, reduce_res, *, dst=None, reverse0=False, dtype=None,
                         mask=None):
    ctx, line, depth = ctx_site()
    on_chip_operand(ctx, line, "tensor_scalar_reduce", data)
    m = tile_mask(mask, data.shape) if mask is not None else None
    with unwritten.collect() as poison:
        v = fvals(data, m, line)
        o0 = palign(operand_value(operand0, m, line), v)[0]
    n0 = opname(op0)
    r = np.asarray(mathops.BINARY[n0](o0, v) if reverse0 else mathops.BINARY[n0](v, o0), F32)
    rn = opname(reduce_op)
    axes = unwritten.free_axes(r.shape)
    src = r if m is None else np.where(m, r, F32({"maximum": -np.inf, "minimum": np.inf}.get(rn, 0.0)))
    red = np.asarray(mathops.REDUCE[rn](src, axis=axes, keepdims=True), F32)
    srcs = [data] + ([operand0] if is_tensor(operand0) else [])
    out = emit(ctx, "tensor_scalar_reduce", "vector", line, depth, r, dst=dst, dtype=dtype or data.st.dt, srcs=srcs,
               mask=mask, src_storages=(data.st,), extra={"alu": n0, "reduce": rn})
    if reduce_res is not None:
        write(reduce_res, ctx.round(_fit(red, reduce_res.shape, "tensor_scalar_reduce"), reduce_res.st.dt), None, line)
    if poison:
        unwritten.elementwise(out, poison)
        if reduce_res is not None:
            unwritten.reduction(reduce_res, poison, tuple(r.shape), axes, m)
    return out


def tensor_tensor_scan(data0, data1, initial, op0, op1, *, dst=None, reverse0=False, reverse1=False, dtype=None,
                       mask=None):
    ctx, line, depth = ctx_site()
    for t in (data0, data1):
        on_chip_operand(ctx, line, "tensor_tensor_scan", t)
    with unwritten.collect() as poison:
        a = fvals(data0, None, line)
        b = fvals(data1, None, line)
        init = operand_value(initial, None, line)
    P = a.shape[0]
    a2, b2 = a.reshape(P, -1), b.reshape(P, -1)
    if a2.shape != b2.shape:

        raise SimShapeError(f"tensor_tensor_scan: data0 {list(a.shape)} and data1 {list(b.shape)} differ in "
                            "elements per partition")
    f0, f1 = mathops.BINARY[opname(op0)], mathops.BINARY[opname(op1)]
    prev = np.broadcast_to(np.asarray(init, F32).reshape(-1), (P,)) if np.ndim(init) else np.full(P, init, F32)
    out = np.empty_like(a2, dtype=F32)
    for i in range(a2.shape[1]):  # a true recurrence along the free axis
        x = f0(prev, a2[:, i]) if reverse0 else f0(a2[:, i], prev)
        prev = np.asarray(f1(b2[:, i], x) if reverse1 else f1(x, b2[:, i]), F32)
        out[:, i] = prev
    srcs = [data0, data1] + ([initial] if is_tensor(initial) else [])
    res = emit(ctx, "tensor_tensor_scan", "vector", line, depth, out.reshape(a.shape), dst=dst,
               dtype=dtype or data0.st.dt, srcs=srcs, mask=mask, src_storages=(data0.st, data1.st),
               extra={"alu": opname(op1)})
    if poison:  # each element depends on every earlier one of its partition: a prefix reduction
        bad, unplaced = unwritten.union(poison, tuple(a.shape))
        unwritten.report(unplaced, untracked=True)
        if bad.any():
            flat = bad.reshape(P, -1)
            prefix = np.logical_or.accumulate(flat, axis=1)
            rows_all = flat.all(axis=1)
            if (prefix & ~rows_all[:, None]).any():
                unwritten.report(poison)
            unwritten.place(res, np.broadcast_to(rows_all[:, None], flat.shape).reshape(tuple(res.shape)), poison)
    return res
