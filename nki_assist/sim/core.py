"""Instruction semantics shared by both dialects and by `nl`/`nisa`: the instruction machinery
(`ctx_site`, `emit`, `new_tile`) and the Vector/Scalar/GpSimd instructions. Tensor Engine instructions
are in tensor_engine.py, DMA in dma.py.

Every instruction reads its operands through `access.read` (checks), computes in fp32 with one numpy
expression, writes the destination through `access.write` (rounding to the destination dtype) and
appends one trace entry. `dst=None` means "return a new tile" (legacy style and `nl.*` convenience
ops); otherwise the result goes into `dst` (new-dialect ISA style).
"""

from __future__ import annotations

import functools

import numpy as np

from ..rules.nki.reductions import partition_reduce_advice
from . import context, mathops, provenance, unwritten, value_ranges
from .access import box, read, tile_mask, write
from .context import UnsupportedAPI
from .dtypes import FLOAT32, DType, resolve
from .tensor import ON_CHIP, SimShapeError, Tensor, allocate, bind_site, commit_pending

F32 = np.float32


# -- helpers ---------------------------------------------------------------------------------------
def ctx_site():
    ctx = context.current()
    if ctx.pending:
        commit_pending(ctx)
    line, depth = ctx.site()
    return ctx, line, depth


def opname(op) -> str:
    n = getattr(op, "_nki_op", None)
    if n is not None:
        return n
    if isinstance(op, str):
        return op
    try:
        n = mathops.NUMPY_NAMES.get(op)
    except TypeError:
        n = None
    if n is None:
        raise UnsupportedAPI(f"operator {getattr(op, '__name__', op)!r}")
    return n


def is_tensor(x) -> bool:
    return type(x) is Tensor or isinstance(x, Tensor)


def fvals(t: Tensor, m, line, **kw) -> np.ndarray:
    return mathops.f32(read(t, m, line, **kw))


def promote(a: DType, b: DType) -> DType:
    """Legacy NKI type promotion (nki.api.shared.rst "NKI Type Promotion")."""
    if a is b:
        return a
    if a.is_float and b.is_float:
        names = {a.name, b.name}
        if "float32" in names or "tfloat32" in names or "float32r" in names or names == {"float16", "bfloat16"}:
            return FLOAT32
        if all(n.startswith("float8") for n in names):
            return resolve("bfloat16")
        return a if a.itemsize >= b.itemsize else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    names = {a.name, b.name}
    if names == {"int8", "uint8"}:
        return resolve("int16")
    if names == {"int32", "uint32"}:
        return FLOAT32
    return a if a.itemsize >= b.itemsize else b


def scalar_dtype(v) -> DType:
    """Weak Python scalars infer int32 / float32."""
    if isinstance(v, (bool, np.bool_)):
        return resolve("int32")
    if isinstance(v, (int, np.integer)):
        return resolve("int32")
    return FLOAT32


def new_tile(shape, dt: DType, buffer: str, line, value: np.ndarray | None, mask=None, quiet=False,
             rounded: bool = False) -> Tensor:
    """Result tile of an op. With no mask the rounded value *is* the storage (no fill, no copy).
    `rounded`: the value is already representable in dt (a same-dtype copy)."""
    ctx = context.current()
    if value is not None and mask is None:
        v = value if rounded else ctx.round(value, dt)
        if v.shape != tuple(shape):
            v = np.array(np.broadcast_to(v, shape))
        elif not v.flags.writeable or not v.flags.owndata:
            v = v.copy()
        st = allocate(shape, dt, buffer, line=line, data=v, written=True, pending=True, quiet=quiet)
    else:
        st = allocate(shape, dt, buffer, line=line, pending=True, quiet=quiet)
        if value is not None:
            write(Tensor(st), ctx.round(value, dt), mask, line, exempt_affine=True)
    t = Tensor(st)
    t.fresh = True
    bind_site(ctx, t)
    return t


def emit(ctx, op: str, engine: str, line, depth, result, *, dst: Tensor | None, dtype, srcs, mask=None,
         buffer: str = "sbuf", src_storages=(), extra: dict | None = None, exact_from: DType | None = None,
         **kw) -> Tensor:
    """Write an fp32 result to dst (or a new tile), record the instruction, return the destination.
    `exact_from`: the values are copies of a tensor of this dtype (no rounding needed into the same dtype)."""
    result = np.asarray(result)
    if dst is None:
        dt = resolve(dtype) if dtype is not None else FLOAT32
        m = tile_mask(mask, result.shape) if mask is not None else None
        pmax = ctx.target.partitions
        quiet = False
        for s in srcs:
            if s.shape and s.shape[0] > pmax and s.st.buffer in ON_CHIP:
                quiet = True
        out = new_tile(result.shape, dt, buffer, line, result, m, quiet=quiet, rounded=exact_from is dt)
        out.origin = (kw.get("_alu") or op, src_storages, result, m)
        if kw.get("_alu") in ("add", "subtract") and dt.low_precision:
            check_rebound_acc(ctx, out, src_storages, line, depth)
        if ctx.sanitize:
            provenance.watch(ctx, line, op, out, m, srcs, result)
    else:
        if not is_tensor(dst):
            raise TypeError(f"{op}: dst must be a tensor, got {type(dst).__name__}")
        m = tile_mask(mask, dst.shape) if mask is not None else None
        check_lowp_acc(ctx, dst, kw.get("_alu"), src_storages, line, depth)
        r = _fit(result, dst.shape, op)
        write(dst, r if exact_from is dst.st.dt else ctx.round(r, dst.st.dt), m, line)
        out = dst
        if ctx.sanitize:
            provenance.watch(ctx, line, op, out, m, srcs, r)
    kw.pop("_alu", None)
    ctx.instr(engine, op, line, depth, out, srcs, extra=extra or {}, **kw)
    return out


def _out_dt(dst, dtype, src) -> str:
    """Name of the dtype an instruction writes (for the value-range record)."""
    if dst is not None and is_tensor(dst):
        return dst.st.dt.name
    if dtype is not None:
        try:
            return resolve(dtype).name
        except Exception:  # noqa: BLE001 - a name only; emit reports a bad dtype
            return "float32"
    return src.st.dt.name if src is not None else "float32"


def _fit(result: np.ndarray, shape, op) -> np.ndarray:
    if result.shape == tuple(shape):
        return result
    if result.size == int(np.prod(shape)):
        return result.reshape(shape)
    try:
        return np.broadcast_to(result, shape)
    except ValueError:
        raise SimShapeError(f"{op}: result of shape {list(result.shape)} does not fit dst of shape "
                            f"{list(shape)}") from None


def check_lowp_acc(ctx, dst: Tensor, alu, src_storages, line, depth) -> None:
    """A running sum kept in a bf16/fp16/fp8 tile inside a loop (dst is also an input of the add)."""
    if alu not in ("add", "subtract") or depth <= 0 and not ctx.loops:
        return
    st = dst.st
    if not st.dt.low_precision or not ctx.precise:
        return
    if any(s is st or s is getattr(st, "alias", None) for s in src_storages):

        key = (st.seq, box(dst))  # the same region updated again: a running sum, not a one-off add
        n = ctx.acc_counts.get(key, 0) + 1
        ctx.acc_counts[key] = n
        if n < 2:
            return
        ctx.report("SIM116", line,
                   f"running sum accumulated in {st.dt.name} {st.name or st.buffer + ' tile'}{list(st.shape)} "
                   f"inside a loop: each add rounds to {st.dt.name} (bfloat16 keeps 8 significant bits, one of them implicit), so the "
                   f"sum drifts and small terms vanish.",
                   tensor=st.name, dtype=st.dt.name, shape=list(st.shape))


def check_rebound_acc(ctx, out: Tensor, src_storages, line, depth) -> None:
    """`acc = nl.add(acc, part, dtype=bf16)` in a loop: the input came from this same add last iteration."""
    if not ctx.precise or (depth <= 0 and not ctx.loops):
        return
    out.st.acc_line = line
    if any(s.acc_line == line for s in src_storages):
        st = out.st
        ctx.report("SIM116", line,
                   f"running sum accumulated in {st.dt.name} ({st.name or 'tile'}{list(st.shape)}) across loop "
                   f"iterations: each add rounds to {st.dt.name}, so the sum drifts and small terms vanish.",
                   tensor=st.name, dtype=st.dt.name, shape=list(st.shape))


def check_placement(ctx, line, op: str, t: Tensor, allowed: tuple[str, ...], role: str) -> None:
    if t.st.buffer not in allowed and not (t.st.buffer.endswith("hbm") and "hbm" in allowed):
        ctx.report("SIM106", line,
                   f"{op}: {role} {t.st.name or ''}{list(t.shape)} is in {t.st.buffer.upper()}; it must be in "
                   f"{' or '.join(a.upper() for a in allowed)}.",
                   op=op, operand=role, buffer=t.st.buffer, allowed=list(allowed))


def on_chip_operand(ctx, line, op, t, role="input"):
    if t.st.buffer not in ON_CHIP:
        check_placement(ctx, line, op, t, ON_CHIP, role)


def operand_value(v, m, line):
    """A scalar or a [P,1] tensor operand (tensor_scalar / activation bias & scale), as fp32."""
    if is_tensor(v):
        return fvals(v, _sub(m, v), line)
    if isinstance(v, (int, float, np.number, bool)):
        return F32(v)
    raise TypeError(f"operand must be a number or a tensor, got {type(v).__name__}")


def part_check(ctx, line, op, *ts):
    p0 = None
    for t in ts:  # the common case (all equal) without building a set
        if is_tensor(t) and t.shape and t.st.buffer in ON_CHIP:
            if p0 is None:
                p0 = t.shape[0]
            elif t.shape[0] != p0:
                break
    else:
        return
    ps = {t.shape[0] for t in ts if is_tensor(t) and t.shape and t.st.buffer in ON_CHIP}
    if len(ps) > 1:
        raise SimShapeError(f"{op}: operands span different partition counts {sorted(ps)} "
                            f"(err_num_partition_mismatch)")


# -- elementwise ---------------------------------------------------------------------------------
def elementwise(fn):
    """An op whose output element depends only on the same element of its inputs.

    Reads of never-written positions are not reported here: the positions are handed to the result,
    which keeps them "unwritten" (unwritten.py). A masked-off tail (legacy `nl.load(..., mask=)`, then
    unmasked elementwise ops, then a masked store) is therefore never reported; a store, a reduction or a
    matmul that does consume such values reports SIM111 at that line."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        owner = unwritten.begin()
        if not owner:
            return fn(*args, **kwargs)
        try:
            out = fn(*args, **kwargs)
        finally:
            poison = unwritten.end(owner)
        if poison:
            unwritten.elementwise(out, poison)
        return out

    return wrapper


@elementwise
def unary(name: str, x, *, dst=None, dtype=None, mask=None, engine="scalar", op_label=None) -> Tensor:
    ctx, line, depth = ctx_site()
    if not is_tensor(x):
        raise TypeError(f"{name} expects a tensor, got {type(x).__name__}")
    on_chip_operand(ctx, line, op_label or name, x)
    m = tile_mask(mask, x.shape) if mask is not None else None
    v = fvals(x, m, line)
    r = mathops.UNARY[name](v)
    if name in value_ranges.RANGED:
        value_ranges.record(ctx, line, depth, name, v, m, lambda: _out_dt(dst, dtype, x),
                            scalar_engine=engine == "scalar")
    return emit(ctx, op_label or "activation", engine, line, depth, r, dst=dst, dtype=dtype or x.st.dt, srcs=[x],
                mask=mask, src_storages=(x.st,), extra={"func": name})


@elementwise
def binary(name: str, a, b, *, dst=None, dtype=None, mask=None, engine=None) -> Tensor:
    ctx, line, depth = ctx_site()
    ta, tb = is_tensor(a), is_tensor(b)
    if not ta and not tb:
        raise TypeError(f"{name}: at least one operand must be a tensor")
    m = None
    if mask is not None:
        sa, sb = (np.empty(a.shape if ta else (), bool), np.empty(b.shape if tb else (), bool))
        sa, sb = palign(sa, sb)
        m = tile_mask(mask, np.broadcast_shapes(sa.shape, sb.shape))
    srcs = [a, b] if ta and tb else [a] if ta else [b]
    for x in srcs:
        on_chip_operand(ctx, line, name, x)
    if ta and tb:
        part_check(ctx, line, name, a, b)
        if a.st.buffer == "psum" and b.st.buffer == "psum":
            ctx.report("SIM106", line, f"{name}: both inputs are in PSUM; tensor_tensor reads at most one PSUM "
                       "operand.", op=name, buffer="psum")
    va = fvals(a, _sub(m, a), line) if ta else a
    vb = fvals(b, _sub(m, b), line) if tb else b
    ints = (not a.st.dt.is_float if ta else isinstance(a, (int, np.integer))) and (
        not b.st.dt.is_float if tb else isinstance(b, (int, np.integer)))
    if ints:
        va = read(a, None, line) if ta else a
        vb = read(b, None, line) if tb else b
    if ta and tb:
        va, vb = palign(va, vb)
    if name == "power" and ta:  # the base's range (x ** p overflows or loses its sign through it)
        value_ranges.record(ctx, line, depth, name, va, _sub(m, a), lambda: _out_dt(dst, dtype, a),
                            scalar_engine=False)
    try:
        r = mathops.BINARY[name](va, vb)
    except ValueError:
        raise SimShapeError(f"{name}: operand shapes {list(np.shape(va))} and {list(np.shape(vb))} do not "
                            f"broadcast") from None
    if dtype is None:
        da = a.st.dt if ta else scalar_dtype(a)
        db = b.st.dt if tb else scalar_dtype(b)
        dtype = promote(da, db)
    kind = "tensor_tensor" if ta and tb else "tensor_scalar"
    if engine is None:
        engine = "gpsimd" if (ints and kind == "tensor_tensor") or name == "power" else "vector"
    return emit(ctx, kind, engine, line, depth, r, dst=dst, dtype=dtype, srcs=srcs, mask=mask,
                src_storages=tuple([x.st for x in srcs]), extra={"alu": name}, _alu=name)


def palign(va, vb):
    """NKI tiles broadcast from the partition axis: a [P] tile (a free-axis reduction without keepdims)
    against a [P, F] tile is [P, 1], not numpy's trailing-axis alignment."""
    na = va.ndim if type(va) is np.ndarray else np.ndim(va)
    nb = vb.ndim if type(vb) is np.ndarray else np.ndim(vb)
    if na and nb and na != nb and np.shape(va)[0] == np.shape(vb)[0]:
        if na < nb:
            va = np.reshape(va, np.shape(va) + (1,) * (nb - na))
        else:
            vb = np.reshape(vb, np.shape(vb) + (1,) * (na - nb))
    return va, vb


def _sub(m, t):
    """Project an instruction mask onto an operand that broadcasts against it ([P] or [P,1] vs [P,F])."""
    if m is None:
        return None
    ts = tuple(t.shape)
    if m.shape == ts:
        return m
    if len(ts) < m.ndim:
        al = ts + (1,) * (m.ndim - len(ts)) if ts and ts[0] == m.shape[0] else (1,) * (m.ndim - len(ts)) + ts
    else:
        al = ts
    if len(al) != m.ndim or any(x != y and x != 1 for x, y in zip(al, m.shape)):
        return None
    axes = tuple(i for i, (x, y) in enumerate(zip(al, m.shape)) if x == 1 and y != 1)
    r = m.any(axis=axes, keepdims=True) if axes else m
    return r.reshape(ts)


def reduce(name: str, x, axis, *, dst=None, dtype=None, mask=None, keepdims=False, negate=False,
           op_label="tensor_reduce") -> Tensor:
    ctx, line, depth = ctx_site()
    on_chip_operand(ctx, line, op_label, x)
    axes = _axes(axis, len(x.shape))
    if 0 in axes and len(x.shape) > 1 and x.shape[0] > 1:
        clause, fix = partition_reduce_advice(name)
        ctx.report("SIM119", line, f"{op_label} over axis 0 (the partition axis) of a {list(x.shape)} tile: "
                   f"Vector Engine reductions run along free axes only, so this does not compile; {clause}.",
                   api=op_label, shape=list(x.shape), axis=list(axes), op=name, _fix=fix)
    m = tile_mask(mask, x.shape) if mask is not None else None
    with unwritten.collect() as poison:
        v = fvals(x, m, line)
    if m is not None:
        fill = {"add": 0.0, "maximum": -np.inf, "minimum": np.inf, "multiply": 1.0}.get(name, 0.0)
        v = np.where(m, v, F32(fill))
    if name == "mean":
        r = np.mean(v, axis=axes, keepdims=keepdims, dtype=F32)
    elif name == "var":
        r = np.var(v, axis=axes, keepdims=keepdims, dtype=F32)
    else:
        fn = mathops.REDUCE.get(name)
        if fn is None:
            raise UnsupportedAPI(f"reduction with operator {name}")
        r = fn(v, axis=axes, keepdims=keepdims)
    r = np.asarray(r, dtype=F32)
    if negate:
        r = -r
    out = emit(ctx, op_label, "vector", line, depth, r, dst=dst, dtype=dtype or x.st.dt, srcs=[x],
               src_storages=(x.st,), extra={"alu": name, "axis": list(axes)})
    if poison:
        unwritten.reduction(out, poison, tuple(x.shape), axes, m)
    return out


def _axes(axis, nd) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(1, nd)) if nd > 1 else (0,)
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) % nd for a in axis)
    return (int(axis) % nd,)


@elementwise
def copy(src, *, dst=None, dtype=None, mask=None, engine="vector", op_label="tensor_copy") -> Tensor:
    ctx, line, depth = ctx_site()
    on_chip_operand(ctx, line, op_label, src)
    m = tile_mask(mask, src.shape) if mask is not None else None
    v = read(src, m, line)
    if engine == "gpsimd" and (src.st.buffer == "psum" or (dst is not None and dst.st.buffer == "psum")):
        ctx.report("SIM106", line, f"{op_label} on GpSimd cannot access PSUM.", op=op_label, buffer="psum")
    return emit(ctx, op_label, engine, line, depth, np.array(v, copy=True), dst=dst, dtype=dtype or src.st.dt,
                srcs=[src], mask=mask, src_storages=(src.st,), exact_from=src.st.dt)


# -- activation / scalar ops -----------------------------------------------------------------------
@elementwise
def activation(op, data, *, dst=None, bias=None, scale=1.0, reduce_op=None, reduce_res=None, dtype=None,
               mask=None, label="activation") -> Tensor:
    ctx, line, depth = ctx_site()
    name = opname(op)
    fn = mathops.UNARY.get(name)
    if fn is None:
        raise UnsupportedAPI(f"activation function {name}")
    on_chip_operand(ctx, line, label, data)
    m = tile_mask(mask, data.shape) if mask is not None else None
    v = fvals(data, m, line)
    if is_tensor(scale):
        if scale.st.dt.name not in ("float32",):
            ctx.report("SIM107", line, f"{label}: scale tensor is {scale.st.dt.name}; ScalarE takes an fp32 "
                       "scale (err_activation_scale_invalid_type).", op=label, dtype=scale.st.dt.name)
        v = v * palign(fvals(scale, None, line), v)[0]
    elif scale is not None and scale != 1.0:
        v = v * F32(scale)
    if bias is not None:
        if is_tensor(bias):
            if bias.st.dt.name not in ("float32", "float16", "bfloat16"):
                ctx.report("SIM107", line, f"{label}: bias is {bias.st.dt.name}; ScalarE bias must be fp32, fp16 "
                           "or bf16 (err_activation_bias_invalid_type).", op=label, dtype=bias.st.dt.name)
            v = v + palign(fvals(bias, None, line), v)[0]
        else:
            v = v + F32(bias)
    v = v.astype(F32, copy=False)
    r = fn(v)
    if name in value_ranges.RANGED:  # the argument after scale and bias: what the function sees
        value_ranges.record(ctx, line, depth, name, v, m, lambda: _out_dt(dst, dtype, data),
                            scalar_engine=True)
    out = emit(ctx, label, "scalar", line, depth, r, dst=dst, dtype=dtype or data.st.dt, srcs=[data],
               mask=mask, src_storages=(data.st,), extra={"func": name})
    if reduce_res is not None or reduce_op is not None:
        rname = opname(reduce_op) if reduce_op is not None else "add"
        if rname != "add":
            ctx.report("SIM115", line, f"{label}: reduce_op must be nl.add on ScalarE (got {rname}).", api=label)
        red = mathops.REDUCE.get(rname, np.sum)(np.asarray(r, F32), axis=tuple(range(1, r.ndim)), keepdims=True)
        if reduce_res is not None:
            red = _fit(np.asarray(red, F32), reduce_res.shape, label)
            write(reduce_res, ctx.round(red, reduce_res.st.dt), None, line)
            if ctx.poison:  # the elementwise wrapper collects; the reduction result needs its own placing
                unwritten.reduction(reduce_res, list(ctx.poison), tuple(r.shape), unwritten.free_axes(r.shape))
            if ctx.sanitize:
                provenance.watch(ctx, line, label, reduce_res, None, [data], red)
    return out


@elementwise
def tensor_scalar(data, op0, operand0, *, dst=None, reverse0=False, op1=None, operand1=None, reverse1=False,
                  dtype=None, mask=None, engine="vector") -> Tensor:
    ctx, line, depth = ctx_site()
    on_chip_operand(ctx, line, "tensor_scalar", data)
    m = tile_mask(mask, data.shape) if mask is not None else None
    v = fvals(data, m, line)
    n0 = opname(op0)
    o0 = palign(operand_value(operand0, m, line), v)[0]
    if n0 in value_ranges.RANGED and not reverse0:
        value_ranges.record(ctx, line, depth, n0, v, m, lambda: _out_dt(dst, dtype, data),
                            scalar_engine=False)
    r = mathops.BINARY[n0](o0, v) if reverse0 else mathops.BINARY[n0](v, o0)
    srcs = [data] + [o for o in (operand0, operand1) if is_tensor(o)]
    if op1 is not None:
        n1 = opname(op1)
        o1 = palign(operand_value(operand1, m, line), v)[0]
        r = mathops.BINARY[n1](o1, r) if reverse1 else mathops.BINARY[n1](r, o1)
    return emit(ctx, "tensor_scalar", engine or "vector", line, depth, np.asarray(r, F32), dst=dst,
                dtype=dtype or data.st.dt, srcs=srcs, mask=mask, src_storages=(data.st,),
                extra={"alu": n0})


@elementwise
def scalar_tensor_tensor(data, op0, operand0, op1, operand1, *, dst=None, reverse0=False, reverse1=False,
                         dtype=None, mask=None) -> Tensor:
    """(data op0 operand0) op1 operand1, operand1 a tensor."""
    ctx, line, depth = ctx_site()
    v = fvals(data, None, line)
    o0 = palign(operand_value(operand0, None, line), v)[0]  # a [P, 1] scalar column against an N-D tile
    n0, n1 = opname(op0), opname(op1)
    r = mathops.BINARY[n0](o0, v) if reverse0 else mathops.BINARY[n0](v, o0)
    o1 = fvals(operand1, None, line)
    r = mathops.BINARY[n1](o1, r) if reverse1 else mathops.BINARY[n1](r, o1)
    return emit(ctx, "scalar_tensor_tensor", "vector", line, depth, np.asarray(r, F32), dst=dst,
                dtype=dtype or data.st.dt, srcs=[data, operand1], mask=mask,
                src_storages=(data.st, operand1.st), extra={"alu": n1}, _alu=n1)


def consume(t: Tensor) -> None:
    """A fresh op result bound to its destination: it was never a separate live tile."""
    ctx = context.current()
    t.fresh = False
    try:
        ctx.pending.remove(t.st)
    except ValueError:
        pass
