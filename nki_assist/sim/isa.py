"""`nki.isa` for both dialects: thin signature adapters over core.py.

Legacy (`neuronxcc.nki.isa`, NKI 0.1) ISA calls return a new tile and take `dtype=`/`mask=`; new (`nki.isa`,
0.2+) calls take `dst` first and return nothing (nki-facts §2.2, §2.4).
"""

from __future__ import annotations

import enum

from . import context, core, dma, registers, unwritten, vector_ext, vector_ops
from . import tensor_engine as te
from .context import UnsupportedAPI
from .indexing import Mask


class _Enum:
    """Permissive enum namespace (`nisa.engine.vector`, `nisa.reduce_cmd.reset`, ...)."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, item):
        if item.startswith("__"):
            raise AttributeError(item)
        return f"{self._name}.{item}"


ENUMS = {n: _Enum(n) for n in ("engine", "reduce_cmd", "dge_mode", "oob_mode", "matmul_perf_mode")}


class nc_version(enum.IntEnum):
    """`nisa.nc_version`: NeuronCore generation, ordered (`get_nc_version() >= nc_version.gen3`)."""

    gen2 = 2  # trn1 / inf2
    gen3 = 3  # trn2
    gen4 = 4  # trn3


def get_nc_version() -> nc_version:
    core = context.current().target.neuron_core  # "NeuronCore-v2" .. "NeuronCore-v4"
    return nc_version(int(core.rsplit("v", 1)[-1]))


# legacy engine selectors (`engine=nisa.vector_engine`)
ENGINE_NAMES = {f"{n}_engine": f"engine.{n}" for n in ("tensor", "vector", "scalar", "gpsimd", "unknown")}
COMMON = dict(ENUMS, nc_version=nc_version, get_nc_version=get_nc_version, **ENGINE_NAMES)


def _engine(e, default: str) -> str:
    if e is None:
        return default
    s = str(e).lower()
    for name in ("tensor", "vector", "scalar", "gpsimd", "pool", "act", "sync"):
        if name in s:
            return {"pool": "gpsimd", "act": "scalar", "sync": "dma"}.get(name, name)
    return default


def _reduce_name(op) -> str:
    n = core.opname(op)
    return n


# -- legacy (return-value) signatures --------------------------------------------------------------
def legacy_namespace() -> dict:
    def nc_matmul(stationary, moving, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False,
                  tile_position=(), tile_size=(), mask=None, perf_mode=None, **kw):
        return te.matmul(stationary, moving, is_transpose=is_transpose, mask=mask, perf_mode=perf_mode)

    def nc_transpose(data, engine=None, mask=None, dtype=None, **kw):
        P = data.shape[0]
        F = 1
        for d in data.shape[1:]:
            F *= d
        eng = _engine(engine, "vector" if P <= 32 and F <= 32 else "tensor")
        return te.transpose(data, engine=eng, dtype=dtype)

    def activation(op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=None, mask=None,
                   dtype=None, **kw):
        return core.activation(op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
                               dtype=dtype, mask=mask)

    def activation_reduce(op, data, reduce_op=None, reduce_res=None, bias=None, scale=1.0, mask=None, dtype=None,
                          **kw):
        return core.activation(op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
                               dtype=dtype, mask=mask, label="activation_reduce")

    def tensor_tensor(data1, data2, op, dtype=None, mask=None, engine=None, **kw):
        return core.binary(core.opname(op), data1, data2, dtype=dtype, mask=mask,
                           engine=_engine(engine, None) if engine is not None else None)

    def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, dtype=None,
                      mask=None, engine=None, **kw):
        return core.tensor_scalar(data, op0, operand0, reverse0=reverse0, op1=op1, operand1=operand1,
                                  reverse1=reverse1, dtype=dtype, mask=mask, engine=_engine(engine, "vector"))

    def tensor_reduce(op, data, axis, negate=False, keepdims=False, dtype=None, mask=None, **kw):
        return core.reduce(_reduce_name(op), data, axis, dtype=dtype, mask=mask, keepdims=keepdims, negate=negate)

    def tensor_copy(src, engine=None, dtype=None, mask=None, **kw):
        return core.copy(src, dtype=dtype, mask=mask, engine=_engine(engine, "vector"))

    def memset(shape, value, dtype=None, mask=None, engine=None, **kw):
        return vector_ops.memset(value, shape=shape, dtype=dtype, mask=mask, engine=_engine(engine, "vector"))

    def iota(expr, dtype=None, mask=None, **kw):
        return vector_ops.iota_expr(expr, dtype, mask=mask)

    def affine_select(pred, on_true_tile, on_false_value, dtype=None, mask=None, **kw):
        if not isinstance(pred, Mask):
            raise UnsupportedAPI("nisa.affine_select with a non-affine predicate")
        return vector_ops.select(pred, on_true_tile, on_false_value, dtype=dtype, mask=mask, label="affine_select",
                           engine="gpsimd")

    def dma_copy(dst=None, src=None, mask=None, dst_rmw_op=None, oob_mode=None, dge_mode=None, **kw):
        dma.dma(dst, src, mask=mask, accumulate_op=dst_rmw_op)

    def bn_stats(data, dtype=None, mask=None, **kw):
        return vector_ops.bn_stats(data, dtype=dtype, mask=mask)

    def bn_aggr(data, dtype=None, mask=None, **kw):
        return vector_ops.bn_aggr(data, dtype=dtype, mask=mask)

    def reciprocal(data, dtype=None, mask=None, **kw):
        return core.unary("reciprocal", data, dtype=dtype, mask=mask, engine="vector", op_label="reciprocal")

    def scalar_tensor_tensor(data=None, op0=None, operand0=None, op1=None, operand1=None, reverse0=False,
                             reverse1=False, dtype=None, mask=None, **kw):
        return core.scalar_tensor_tensor(data, op0, operand0, op1, operand1, reverse0=reverse0, reverse1=reverse1,
                                         dtype=dtype, mask=mask)

    def tensor_partition_reduce(op, data, dtype=None, mask=None, **kw):
        return _partition_reduce(None, op, data, dtype)

    def max8(src=None, dtype=None, mask=None, **kw):
        return _max8(None, src, dtype)

    def tensor_scalar_reduce(data=None, op0=None, operand0=None, reduce_op=None, reduce_res=None, reverse0=False,
                             dtype=None, mask=None, **kw):
        return vector_ext.tensor_scalar_reduce(data, op0, operand0, reduce_op, reduce_res, reverse0=reverse0,
                                               dtype=dtype, mask=mask)

    def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False, dtype=None, mask=None,
                           **kw):
        return vector_ext.tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=reverse0, reverse1=reverse1,
                                             dtype=dtype, mask=mask)

    def dma_transpose(src, axes=None, dtype=None, mask=None, **kw):
        return dma.transpose_copy(src, dtype=dtype, mask=mask)

    def nc_stream_shuffle(src, shuffle_mask, dtype=None, mask=None, **kw):
        # the value-returning form: partitions marked 255 would hold whatever the new tile held
        raise UnsupportedAPI("nisa.nc_stream_shuffle", "the legacy value-returning form", limit=True)

    def nc_match_replace8(data, vals, imm, dst_idx=None, **kw):
        raise UnsupportedAPI("nisa.nc_match_replace8", "the legacy value-returning form", limit=True)

    ns = dict(nc_match_replace8=nc_match_replace8, nc_stream_shuffle=nc_stream_shuffle, nc_matmul=nc_matmul, nc_transpose=nc_transpose, activation=activation,
              activation_reduce=activation_reduce, tensor_tensor=tensor_tensor, tensor_scalar=tensor_scalar,
              tensor_reduce=tensor_reduce, tensor_copy=tensor_copy, memset=memset, iota=iota,
              affine_select=affine_select, dma_copy=dma_copy, bn_stats=bn_stats, bn_aggr=bn_aggr,
              reciprocal=reciprocal, scalar_tensor_tensor=scalar_tensor_tensor,
              tensor_partition_reduce=tensor_partition_reduce, max8=max8, tensor_scalar_reduce=tensor_scalar_reduce,
              tensor_tensor_scan=tensor_tensor_scan, dma_transpose=dma_transpose)
    ns.update(COMMON)
    return ns


def _partition_reduce(dst, op, data, dtype):
    import numpy as np

    ctx, line, depth = core.ctx_site()
    with unwritten.collect() as poison:
        v = core.fvals(data, None, line)
    n = core.opname(op)
    r = np.asarray(core.mathops.REDUCE[n](v, axis=0, keepdims=True), np.float32)
    out = core.emit(ctx, "tensor_partition_reduce", "gpsimd", line, depth, r, dst=dst, dtype=dtype or data.st.dt,
                    srcs=[data])
    if poison:
        unwritten.reduction(out, poison, tuple(data.shape), (0,))
    return out


def _max8(dst, src, dtype):
    import numpy as np

    ctx, line, depth = core.ctx_site()
    with unwritten.collect() as poison:
        v = core.fvals(src, None, line)
    v2 = v.reshape(v.shape[0], -1)
    r = -np.sort(-v2, axis=1)[:, :8]
    out = core.emit(ctx, "max8", "vector", line, depth, r.astype(np.float32), dst=dst, dtype=dtype or src.st.dt,
                    srcs=[src])
    if poison:
        unwritten.reduction(out, poison, tuple(src.shape), unwritten.free_axes(src.shape))
    return out


# -- new (dst-first) signatures --------------------------------------------------------------------
def new_namespace() -> dict:
    def nc_matmul(dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False,
                  is_transpose=False, accumulate=None, tile_position=(), tile_size=(), perf_mode=None, **kw):
        te.matmul(stationary, moving, dst=dst, accumulate=accumulate, is_transpose=is_transpose, perf_mode=perf_mode)

    def nc_transpose(dst, data, engine=None, **kw):
        P = data.shape[0]
        F = 1
        for d in data.shape[1:]:
            F *= d
        default = "tensor" if dst.st.buffer == "psum" else ("vector" if P <= 32 and F <= 32 else "tensor")
        te.transpose(data, dst=dst, engine=_engine(engine, default))

    def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=None, **kw):
        core.activation(op, data, dst=dst, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res)

    def activation_reduce(dst, op, data, reduce_op=None, reduce_res=None, bias=None, scale=1.0, **kw):
        core.activation(op, data, dst=dst, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
                        label="activation_reduce")

    def tensor_tensor(dst, data1, data2, op, engine=None, **kw):
        core.binary(core.opname(op), data1, data2, dst=dst,
                    engine=_engine(engine, None) if engine is not None else None)

    def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False,
                      engine=None, **kw):
        core.tensor_scalar(data, op0, operand0, dst=dst, reverse0=reverse0, op1=op1, operand1=operand1,
                           reverse1=reverse1, engine=_engine(engine, "vector"))

    def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, **kw):
        core.reduce(_reduce_name(op), data, axis, dst=dst, keepdims=keepdims, negate=negate)

    def tensor_copy(dst, src, engine=None, **kw):
        core.copy(src, dst=dst, engine=_engine(engine, "vector"))

    def memset(dst, value, engine=None, **kw):
        vector_ops.memset(value, dst=dst, engine=_engine(engine, "vector"))

    def iota(dst, pattern, offset=0, channel_multiplier=0, **kw):
        vector_ops.iota_pattern(dst, pattern, offset, channel_multiplier)

    def affine_select(dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op=None, offset=0, **kw):
        import numpy as np

        vals = vector_ops.pattern_values(dst.shape, pattern, offset, channel_multiplier).reshape(dst.shape)
        name = core.opname(cmp_op) if cmp_op is not None else "greater_equal"
        pred = core.mathops.BINARY[name](vals.astype(np.float32), np.float32(0)) != 0
        vector_ops.select(Mask(pred), on_true_tile, on_false_value, dst=dst, label="affine_select", engine="gpsimd")

    def select(dst, pred, on_true, on_false, **kw):
        vector_ops.select(pred, on_true, on_false, dst=dst)

    def dma_copy(dst, src, priority=None, oob_mode=None, dge_mode=None, engine=None, **kw):
        dma.dma(dst, src)

    def dma_compute(dst, srcs, reduce_op, scales=None, **kw):
        if len(srcs) != 1 or scales is not None:
            raise UnsupportedAPI("nisa.dma_compute with several sources or scales")
        dma.dma(dst, srcs[0], accumulate_op=reduce_op, op="dma_compute")

    def dma_transpose(dst, src, axes=None, **kw):
        # the permutation by rank (nki.isa.dma_transpose): 2-d [1, 0], 3-d [2, 1, 0], 4-d [3, 1, 2, 0]
        perm = tuple(axes) if axes is not None else {3: (2, 1, 0), 4: (3, 1, 2, 0)}.get(len(src.shape))
        dma.dma(dst, src, op="dma_transpose", transpose_2d=True, axes=perm)

    def bn_stats(dst, data, **kw):
        vector_ops.bn_stats(data, dst=dst)

    def bn_aggr(dst, data, **kw):
        vector_ops.bn_aggr(data, dst=dst)

    def reciprocal(dst, data, **kw):
        core.unary("reciprocal", data, dst=dst, engine="vector", op_label="reciprocal")

    def exponential(dst, data, **kw):
        if kw.get("max_value") is not None or kw.get("reduce_res") is not None:
            raise UnsupportedAPI("nisa.exponential with max subtraction / reduction")
        core.unary("exp", data, dst=dst, engine="vector", op_label="exponential")

    def scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, **kw):
        core.scalar_tensor_tensor(data, op0, operand0, op1, operand1, dst=dst, reverse0=reverse0,
                                  reverse1=reverse1)

    def tensor_partition_reduce(dst, op, data, **kw):
        _partition_reduce(dst, op, data, None)

    def max8(dst, src, **kw):
        _max8(dst, src, None)

    def tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res, reverse0=False, **kw):
        vector_ext.tensor_scalar_reduce(data, op0, operand0, reduce_op, reduce_res, dst=dst, reverse0=reverse0)

    def tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, **kw):
        vector_ext.tensor_tensor_scan(data0, data1, initial, op0, op1, dst=dst, reverse0=reverse0, reverse1=reverse1)

    ns = dict(nc_matmul=nc_matmul, nc_transpose=nc_transpose, activation=activation,
              activation_reduce=activation_reduce, tensor_tensor=tensor_tensor, tensor_scalar=tensor_scalar,
              tensor_reduce=tensor_reduce, tensor_copy=tensor_copy, memset=memset, iota=iota,
              affine_select=affine_select, select=select, dma_copy=dma_copy, dma_compute=dma_compute,
              dma_transpose=dma_transpose, bn_stats=bn_stats, bn_aggr=bn_aggr, reciprocal=reciprocal,
              exponential=exponential, scalar_tensor_tensor=scalar_tensor_tensor,
              tensor_partition_reduce=tensor_partition_reduce, max8=max8, tensor_scalar_reduce=tensor_scalar_reduce,
              tensor_tensor_scan=tensor_tensor_scan)
    ns.update(registers.ISA)
    ns.update(COMMON)
    return ns


__all__ = ["legacy_namespace", "new_namespace", "context"]
