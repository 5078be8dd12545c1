"""`nki.language` / `neuronxcc.nki.language` for the simulator (both dialects).

Tensor creation, `nl.load`/`nl.store`, the convenience math ops (each one instruction, see core.py),
loop iterators that record their context, launch-grid queries, index helpers and dtypes. Tensor
operators (`+`, `*`, `+=`, ...) are attached to `Tensor` at the bottom of this module.
"""

from __future__ import annotations

import operator
from types import SimpleNamespace

import numpy as np

from . import block_store, context, core, dma, liveness, mathops, objects, provenance, registers, unwritten, vector_ops
from . import tensor_engine as te
from .access import read, write
from .dtypes import FLOAT32, exposed, resolve
from .indexing import Idx, MGrid
from .loops import (
    affine_range,
    arange,
    device_print,
    ds,
    dynamic_range,
    fori_loop,
    nc,
    no_reorder,
    num_programs,
    program_id,
    program_ndim,
    sequential_range,
    spmd_dim,
    static_range,
)
from .tensor import ON_CHIP, Tensor, allocate, bind_site, commit_pending, register_assign

F32 = np.float32


# -- buffers and shapes ----------------------------------------------------------------------------
class Buffer:
    """`nl.sbuf`, `nl.psum`, `nl.hbm`, ...; allocator methods (`nl.sbuf.mod_alloc(...)`) return the buffer,
    or a `Placed` buffer that records how many physical tiles a modular allocation rotates through."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *a, **k):
        return self

    def mod_alloc(self, *a, num_free_tiles=None, num_bank_tiles=None, **k):
        """Direct allocation (`ncc.sbuf.mod_alloc(base_addr=, num_free_tiles=(2,))`): block i of the tensor
        lives in physical tile i mod n, so only n tiles occupy the buffer."""
        tiles = num_free_tiles if num_free_tiles is not None else num_bank_tiles
        n = None
        if tiles is not None:
            n = 1
            for t in (tiles if isinstance(tiles, (tuple, list)) else (tiles,)):
                n *= int(t)
        return Placed(self.name, n)

    def alloc(self, fn=None, *a, **k):
        return Placed(self.name, None, fn)

    def __getattr__(self, item):
        if item.startswith("__"):
            raise AttributeError(item)
        return lambda *a, **k: self

    def __repr__(self):
        return f"nl.{self.name}"


class Placed:
    """A buffer with an explicit placement: `tiles` physical tiles (None: from `fn`, or unknown)."""

    def __init__(self, name: str, tiles: int | None, fn=None):
        self.name, self.tiles, self.fn = name, tiles, fn

    def physical_blocks(self, shape, pax) -> int | None:
        if self.tiles is not None or self.fn is None or pax == 0:
            return self.tiles
        blocks = shape[:pax]
        try:  # alloc(fn): fn(block index, partitions, free size) -> (bank/address, ...); count distinct ones
            seen = {tuple(np.atleast_1d(self.fn(idx, shape[pax], int(np.prod(shape[pax + 1:]))))[:1])
                    for idx in np.ndindex(*blocks)}
        except Exception:  # noqa: BLE001 - an allocator we cannot evaluate: count every block
            return None
        return len(seen)


BUFFERS = {n: Buffer(n) for n in ("sbuf", "psum", "hbm", "shared_hbm", "private_hbm")}


def buffer_name(b) -> str:
    if b is None:
        return "sbuf"
    if isinstance(b, (Buffer, Placed)):
        return "hbm" if b.name == "private_hbm" else b.name
    if isinstance(b, str) and b in BUFFERS:
        return b
    raise TypeError(f"unknown buffer {b!r}")


class ParDim(int):
    """`nl.par_dim(128)`: marks the partition dimension in a legacy shape with block dims."""


def par_dim(n):
    return ParDim(n)


def _shape(shape) -> tuple[tuple[int, ...], int]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(shape)
    pax = next((i for i, d in enumerate(shape) if isinstance(d, ParDim)), 0)
    return tuple(operator.index(d) for d in shape), pax


# -- creation --------------------------------------------------------------------------------------
def _alloc(shape, dtype, buffer, name, line) -> Tensor:
    ctx = context.current()
    shp, pax = _shape(shape)
    buf = buffer_name(buffer)
    dt = resolve(dtype if dtype is not None else FLOAT32)
    if buf.endswith("hbm"):
        return Tensor(hbm_tensor(ctx, shp, dt, buf, name, line))
    blocks = buffer.physical_blocks(shp, pax) if isinstance(buffer, Placed) else None
    t = Tensor(allocate(shp, dt, buf, line=line, name=name or None, pax=pax, blocks=blocks))
    if isinstance(buffer, Placed) and buf == "sbuf":
        liveness.hold(t.st)
    bind_site(ctx, t)
    return t


def hbm_tensor(ctx, shape, dt, buf, name, line):
    """HBM tensors created in the kernel; in a launch grid the k-th one is shared by all instances."""
    if ctx.pid and any(ctx.pid):
        i = ctx.shared_cursor
        ctx.shared_cursor += 1
        if i < len(ctx.shared_allocs):
            st = ctx.shared_allocs[i]
            if st.shape == shape:
                return st
    name = name or (ctx.lhs_name(line) if line else None) or f"hbm_tensor_{len(ctx.shared_allocs)}"
    st = allocate(shape, dt, buf, line=line, name=name, role="output")
    ctx.shared_allocs.append(st)
    ctx.shared_cursor = len(ctx.shared_allocs)
    return st


def ndarray(shape, dtype=None, buffer=None, name="", address=None, **kw):
    ctx = context.current()
    commit_pending(ctx)
    return _alloc(shape, dtype, buffer, name, ctx.line())


def _filled(shape, dtype, buffer, name, value, label):
    ctx, line, depth = core.ctx_site()
    t = _alloc(shape, dtype, buffer, name, line)
    dt = t.st.dt
    blk, t.st.blk = t.st.blk, None  # the fill is each block's initialisation, not a use: blocks open when used
    lazy = t.st.parts is not None and not (ctx.round.stochastic and dt.is_float and dt.low_precision)
    if lazy:  # per-block storage: every block starts as the fill when first used (rounding is per element)
        one = np.asarray(ctx.round(np.full((1,), value, dtype=F32 if dt.is_float else np.int64), dt))
        block_store.fill(t.st, one.astype(dt.store)[0])
        lazy = not dt.is_float or bool(np.isfinite(one).all())  # a finite fill: nothing for the sanitizer
    else:
        write(t, ctx.round(np.full(t.shape, value, dtype=F32 if dt.is_float else np.int64), dt), None, line,
              exempt_affine=True)
    t.st.blk = blk
    if ctx.sanitize and not lazy:
        provenance.watch(ctx, line, label, t, None, [])
    if t.st.buffer in ON_CHIP:
        ctx.instr("vector", "memset", line, depth, t, [], extra={"value": value})
    return t


def zeros(shape, dtype=None, buffer=None, name="", **kw):
    return _filled(shape, dtype, buffer, name, 0, "zeros")


def ones(shape, dtype=None, buffer=None, name="", **kw):
    return _filled(shape, dtype, buffer, name, 1, "ones")


def full(shape, fill_value, dtype=None, buffer=None, name="", **kw):
    return _filled(shape, dtype, buffer, name, fill_value, "full")


def empty_like(t, dtype=None, buffer=None, name="", **kw):
    return ndarray(t.shape, dtype or t.st.dt, buffer or BUFFERS[t.st.buffer], name)


def zeros_like(t, dtype=None, buffer=None, name="", **kw):
    return zeros(t.shape, dtype or t.st.dt, buffer or BUFFERS[t.st.buffer], name)


def ones_like(t, dtype=None, buffer=None, name="", **kw):
    return ones(t.shape, dtype or t.st.dt, buffer or BUFFERS[t.st.buffer], name)


def full_like(t, fill_value, dtype=None, buffer=None, name="", **kw):
    return full(t.shape, fill_value, dtype or t.st.dt, buffer or BUFFERS[t.st.buffer], name)


def shared_constant(constant, dtype=None, **kw):
    """`nl.shared_constant(np_array, dtype)`: a compile-time constant placed in HBM (read-only)."""
    ctx = context.current()
    arr = np.asarray(constant)
    dt = resolve(dtype if dtype is not None else arr.dtype)
    st = allocate(arr.shape, dt, "shared_hbm", line=ctx.line(), name="shared_constant",
                  data=ctx.round(arr.astype(F32) if dt.is_float else arr, dt).astype(dt.store, copy=False),
                  written=True, role="input")
    return Tensor(st)


class _FInfo:
    """`nl.finfo(dtype)`: min / max / eps / tiny of a float dtype (bfloat16 and fp8 via ml_dtypes)."""

    def __init__(self, dtype):
        import ml_dtypes

        dt = resolve(dtype)
        fi = ml_dtypes.finfo(dt.np_dtype) if dt.is_float else np.iinfo(dt.np_dtype)
        self.dtype = exposed(dt.name)
        self.min, self.max = float(fi.min), float(fi.max)
        self.eps = float(getattr(fi, "eps", 0))
        self.tiny = float(getattr(fi, "tiny", getattr(fi, "smallest_normal", 0)))
        self.bits = int(fi.bits)


def finfo(dtype):
    return _FInfo(dtype)


def sizeinbytes(dtype) -> int:
    """`nl.constants.sizeinbytes(dtype)`."""
    return resolve(dtype).itemsize


# -- data movement ---------------------------------------------------------------------------------
def load(src, dtype=None, mask=None, **kw):
    return dma.load(src, dtype=dtype, mask=mask)


def load_transpose2d(src, dtype=None, mask=None, **kw):
    return dma.load(src, dtype=dtype, mask=mask, transpose_2d=True, op="dma_transpose")


def store(dst, value, mask=None, **kw):
    dma.store(dst, value, mask=mask)


def copy(x, dtype=None, mask=None, **kw):
    return core.copy(x, dtype=dtype, mask=mask)


class LoopReduce:
    """`nl.loop_reduce(x, op, loop_indices)` (legacy): assigned to a tile, it folds x into that tile; on the
    first iteration of its loops it initialises the tile with x (the compiler-emitted NKIBench kernels never
    initialise the destination themselves)."""

    def __init__(self, x: Tensor, alu: str, dtype, mask, first: bool = False):
        self.x, self.alu, self.dtype, self.mask, self.first = x, alu, dtype, mask, first


def _first_iteration(loop_indices) -> bool:
    """Every named loop variable is at its loop's first iteration (matched by value to an active loop)."""
    if not loop_indices:
        return False
    loops = context.current().loops
    for v in loop_indices:
        if not any(f.iter == 0 and f.value is not None and f.value == v for f in loops):
            return False
    return True


def loop_reduce(x, op, loop_indices=None, dtype=None, mask=None, **kw):
    if not isinstance(x, Tensor):
        raise TypeError(f"nl.loop_reduce: x must be a tile, got {type(x).__name__}")
    first = _first_iteration(list(loop_indices) if isinstance(loop_indices, (list, tuple)) else
                             [loop_indices] if loop_indices is not None else [])
    return LoopReduce(x, core.opname(op), dtype, mask, first)


@core.elementwise
def _assign_loop_reduce(dst: Tensor, lr: LoopReduce) -> Tensor:
    """dst = op(dst, x): a reduction over the named loop, so reading dst is not an affine-range carry."""
    ctx, line, depth = core.ctx_site()
    b = core._fit(core.fvals(lr.x, None, line), dst.shape, "loop_reduce")
    if lr.first:  # the first iteration writes x: the destination is not read
        r = b
    else:
        r = mathops.BINARY[lr.alu](core.fvals(dst, None, line, exempt_affine=True), b)
    # every iteration of the reduced loops writes the same destination by design: not an affine-range
    # write conflict (SIM109), so the write is not tagged with the iteration
    saved, ctx.tag = ctx.tag, 0
    try:
        return core.emit(ctx, "tensor_tensor", "vector", line, depth, r, dst=dst, dtype=None, srcs=[dst, lr.x],
                         mask=lr.mask, src_storages=(dst.st, lr.x.st), extra={"alu": lr.alu}, _alu=lr.alu)
    finally:
        ctx.tag = saved


def assign(dst: Tensor, value) -> None:
    """`dst[...] = value`: a fresh op result lands in dst (no extra instruction); else a copy/memset."""
    ctx = context.current()
    if isinstance(value, LoopReduce):
        _assign_loop_reduce(dst, value)
        return
    if isinstance(value, Tensor):
        if value.fresh and value.origin is not None:
            op, srcs, raw, m = value.origin
            core.consume(value)
            line = ctx.line()
            if raw is not None:
                r = core._fit(np.asarray(raw), dst.shape, op)
                if m is not None:
                    m = core._fit(m, dst.shape, op)
                core.check_lowp_acc(ctx, dst, op, srcs, line, 1 if ctx.loops else ctx.static_depth.get(line, 0))
                write(dst, ctx.round(r, dst.st.dt), m, line)
                unwritten.carry(dst, value, m, line)
                if ctx.sanitize:
                    provenance.watch(ctx, line, op, dst, m, [value], r)
            else:  # a fresh load: the DMA lands in dst directly (only where its mask let it)
                v = read(value, m, line)
                same = value.st.dt is dst.st.dt
                v = v if same else ctx.round(mathops.f32(v) if value.st.dt.is_float else v, dst.st.dt)
                write(dst, core._fit(v, dst.shape, "load"), m if m is None else core._fit(m, dst.shape, "load"), line)
                if ctx.sanitize:
                    provenance.watch(ctx, line, "dma_load", dst, None, [value])
            return
        core.copy(value, dst=dst)
        return
    if isinstance(value, (int, float, np.number, bool, np.ndarray)):
        ctx, line, depth = core.ctx_site()
        v = np.asarray(value)
        write(dst, ctx.round(np.broadcast_to(v.astype(F32) if dst.st.dt.is_float else v, dst.shape), dst.st.dt),
              None, line)
        ctx.instr("vector", "memset", line, depth, dst, [])
        return
    raise TypeError(f"cannot assign a {type(value).__name__} to a tensor")


# -- matmul / transpose ----------------------------------------------------------------------------
def matmul(x, y, transpose_x=False, mask=None, **kw):
    """nl.matmul: x[K,M] (transpose_x=True) or x[M,K] (a TensorE transpose first) times y[K,N] -> PSUM fp32."""
    ctx, line, depth = core.ctx_site()
    if not transpose_x:
        xt = te.transpose(x, engine="tensor", buffer="sbuf")
        core.consume(xt)
        x = xt
    return te._matmul(ctx, line, depth, x, y, dst=None, accumulate=None, is_transpose=False, mask=mask,
                        label="nl.matmul")


def transpose(x, dtype=None, mask=None, **kw):
    P = x.shape[0]
    F = int(np.prod(x.shape[1:])) if len(x.shape) > 1 else 1
    engine = "vector" if P <= 32 and F <= 32 else "tensor"
    return te.transpose(x, engine=engine, dtype=dtype, buffer="sbuf", label="nl.transpose")


# -- math ------------------------------------------------------------------------------------------
def _unary_fn(name):
    def fn(x, dtype=None, mask=None, **kw):
        return core.unary(name, x, dtype=dtype, mask=mask)

    fn.__name__ = name
    fn._nki_op = name
    return fn


def _binary_fn(name):
    def fn(x, y, dtype=None, mask=None, **kw):
        return core.binary(name, x, y, dtype=dtype, mask=mask)

    fn.__name__ = name
    fn._nki_op = name
    return fn


def _reduce_fn(name, alu):
    def fn(x, axis=None, dtype=None, mask=None, keepdims=False, **kw):
        return core.reduce(alu, x, axis, dtype=dtype, mask=mask, keepdims=keepdims, op_label="tensor_reduce")

    fn.__name__ = name
    fn._nki_op = alu
    return fn


@core.elementwise
def invert(x, dtype=None, mask=None, **kw):
    ctx, line, depth = core.ctx_site()
    v = read(x, None, line)
    r = np.invert(v) if v.dtype.kind in "iub" else np.invert(v.astype(np.int64))
    return core.emit(ctx, "tensor_scalar", "vector", line, depth, r, dst=None, dtype=dtype or x.st.dt, srcs=[x],
                     mask=mask)


invert._nki_op = "bitwise_not"


bitwise_not = invert


def softmax(x, axis=-1, dtype=None, mask=None, **kw):
    ctx, line, depth = core.ctx_site()
    with unwritten.collect() as poison:
        v = core.fvals(x, None, line)
    ax = core._axes(axis, v.ndim)
    e = np.exp(v - v.max(axis=ax, keepdims=True))
    r = (e / e.sum(axis=ax, keepdims=True)).astype(F32)
    out = core.emit(ctx, "activation", "scalar", line, depth, r, dst=None, dtype=dtype or x.st.dt, srcs=[x],
                    mask=mask, extra={"func": "softmax"})
    if poison:
        unwritten.reduction(out, poison, tuple(x.shape), ax)
    return out


def where(condition, x, y, dtype=None, mask=None, **kw):
    return vector_ops.select(condition, x, y, dtype=dtype, mask=mask, label="select")


@core.elementwise
def broadcast_to(x, shape, **kw):
    ctx, line, depth = core.ctx_site()
    v = core.fvals(x, None, line) if x.st.dt.is_float else read(x, None, line)
    shape = tuple(shape)
    if v.ndim < len(shape) and v.ndim and v.shape[0] == shape[0]:
        v = v.reshape(v.shape + (1,) * (len(shape) - v.ndim))
    r = np.array(np.broadcast_to(v, shape))
    engine = "tensor" if x.shape and shape and x.shape[0] != shape[0] else "vector"
    return core.emit(ctx, "broadcast", engine, line, depth, r, dst=None, dtype=x.st.dt, srcs=[x])


@core.elementwise
def dropout(x, rate, dtype=None, mask=None, **kw):
    ctx, line, depth = core.ctx_site()
    v = core.fvals(x, None, line)
    keep = ctx.round.rng.random(v.shape) >= float(rate)
    return core.emit(ctx, "dropout", "gpsimd", line, depth, np.where(keep, v, F32(0)), dst=None,
                     dtype=dtype or x.st.dt, srcs=[x], mask=mask)


def tile_size_for(target) -> SimpleNamespace:
    """nl.tile_size constants (tiling-overview.rst; hardware.py)."""
    return SimpleNamespace(
        pmax=target.partitions, gemm_stationary_fmax=target.stationary_fmax, gemm_moving_fmax=512,
        psum_fmax=target.psum_bank_fp32, psum_bank_fmax=target.psum_bank_fp32, bn_stats_fmax=target.bn_stats_fmax,
        bn_stats_dim=6, bn_aggr_dim=2, psum_num_banks=target.psum_banks,
        total_available_sbuf_size=target.sbuf_usable_bytes_per_partition,
        sbuf_fmax=target.sbuf_usable_bytes_per_partition,
        sbuf_fmax_bytes=target.sbuf_usable_bytes_per_partition,
    )


UNARY_NAMES = [n for n in mathops.UNARY if n not in ("identity",)]


BINARY_NAMES = [n for n in mathops.BINARY if n != "rsqrt"]


REDUCE_NAMES = {"sum": "add", "max": "maximum", "min": "minimum", "prod": "multiply", "mean": "mean", "var": "var"}


DTYPE_NAMES = ["float32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2", "float8_e4m3fn", "float8_e8m0fnu",
               "tfloat32", "float32r", "int8", "int16", "int32", "uint8", "uint16", "uint32", "bool_"]


def namespace(target) -> dict:
    """Every public name of the simulated nki.language."""
    ns: dict = {}
    for n in UNARY_NAMES:
        ns[n] = _unary_fn(n)
    ns["identity"] = ns["copy_"] = _unary_fn("identity")
    for n in BINARY_NAMES:
        ns[n] = _binary_fn(n)
    for n, alu in REDUCE_NAMES.items():
        ns[n] = _reduce_fn(n, alu)
    for n in DTYPE_NAMES:
        ns[n] = exposed(n)
    ns["bool"] = ns["bool_"]
    ns.update(BUFFERS)
    ns.update(
        ndarray=ndarray, zeros=zeros, ones=ones, full=full, empty_like=empty_like, zeros_like=zeros_like,
        ones_like=ones_like, full_like=full_like, load=load, store=store, load_transpose2d=load_transpose2d,
        copy=copy, matmul=matmul, transpose=transpose, invert=invert, bitwise_not=bitwise_not, softmax=softmax,
        where=where, broadcast_to=broadcast_to, dropout=dropout, affine_range=affine_range,
        sequential_range=sequential_range, static_range=static_range, dynamic_range=dynamic_range,
        fori_loop=fori_loop, program_id=program_id, num_programs=num_programs, program_ndim=program_ndim,
        nc=nc, spmd_dim=spmd_dim, loop_reduce=loop_reduce, device_print=device_print, no_reorder=no_reorder, arange=arange,
        mgrid=MGrid(), ds=ds, par_dim=par_dim, tile_size=tile_size_for(target), shared_constant=shared_constant,
        finfo=finfo, fp32=_FInfo("float32"), while_loop=registers.while_loop, NKIObject=objects.NKIObject,
        shared_identity_matrix=objects.shared_identity_matrix,
    )
    return ns


copy._nki_op = "copy"


# -- Tensor operators ------------------------------------------------------------------------------
def _op(name, reverse=False):
    def method(self, other):
        if isinstance(other, Idx):
            return NotImplemented
        return core.binary(name, other, self) if reverse else core.binary(name, self, other)

    return method


def _iop(name):
    def method(self, other):
        ctx = context.current()
        line, depth = ctx.site()
        st = self.st
        if (st.buffer == "psum" and name == "add" and isinstance(other, Tensor) and other.fresh
                and other.origin is not None and other.origin[0] == "matmul"):
            # `psum += nl.matmul(...)`: TensorE accumulates into PSUM in fp32 (no Vector instruction).
            raw = other.origin[2]
            core.consume(other)
            commit_pending(ctx)
            # legacy `psum += matmul` starts an accumulation group: the first matmul overwrites (the compiler
            # sets the PSUM zero flag), as AWS's attention tutorials rely on with an nl.ndarray PSUM tile
            te._psum_accumulate(ctx, line, self, core._fit(raw, self.shape, "+="), None, None if ctx.legacy else True)
            unwritten.carry(self, other, None, line)
            self.origin = ("iadd-done", st)
            return self
        commit_pending(ctx)
        # `t += x` is an associative reduction, which affine_range allows (NKI's affine_range docs; AWS's fused
        # Mamba tutorial accumulates `scanC_accum[...] += scanC` in SBUF that way); an explicit
        # `t[...] = nl.add(t, x)` is still a loop-carried read
        psum = st.buffer == "psum" or name in ("add", "subtract", "multiply")
        with unwritten.collect() as poison:
            a = core.fvals(self, None, line, exempt_affine=psum)
            if isinstance(other, Tensor):
                b = core.fvals(other, None, line)
                srcs = [self, other]
            else:
                b = other
                srcs = [self]
        r = mathops.BINARY[name](a, b)
        core.check_lowp_acc(ctx, self, name, (st,), line, depth)
        r = core._fit(np.asarray(r, F32), self.shape, "+=")
        write(self, ctx.round(r, st.dt), None, line, exempt_affine=psum)
        if poison:
            unwritten.elementwise(self, poison)
        if ctx.sanitize:
            provenance.watch(ctx, line, name, self, None, srcs, r)
        ctx.instr("vector", "tensor_tensor" if isinstance(other, Tensor) else "tensor_scalar", line, depth, self, srcs,
                  extra={"alu": name})
        self.origin = ("iadd-done", st)
        return self

    return method


def _neg(self):
    return core.binary("multiply", self, -1)


for _n, _name in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "divide"),
                  ("pow", "power"), ("mod", "mod"), ("and", "bitwise_and"), ("or", "bitwise_or"),
                  ("xor", "bitwise_xor"), ("lshift", "left_shift"), ("rshift", "right_shift")]:
    setattr(Tensor, f"__{_n}__", _op(_name))
    setattr(Tensor, f"__r{_n}__", _op(_name, reverse=True))


for _n, _name in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal")]:
    setattr(Tensor, f"__{_n}__", _op(_name))


for _n, _name in [("iadd", "add"), ("isub", "subtract"), ("imul", "multiply"), ("itruediv", "divide")]:
    setattr(Tensor, f"__{_n}__", _iop(_name))


Tensor.__neg__ = _neg


Tensor.broadcast_to = lambda self, shape: broadcast_to(self, shape)


Tensor.__invert__ = lambda self: invert(self)


register_assign(assign)
