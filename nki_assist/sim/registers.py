"""Virtual registers and register-driven control (nki.isa register_* , nl.dynamic_range/fori_loop/while_loop),
and the index-finding instructions (nisa.nc_find_index8 after max8, nisa.nonzero_with_count) and
nisa.nc_stream_shuffle (a cross-partition move inside each 32-partition quadrant).

A register holds one 32-bit integer. The simulator runs eagerly, so a register's value is known when a loop
reads it: `nl.dynamic_range(reg)` is a sequential loop of that many iterations, `while reg:` and
`nl.while_loop` test it each time round. Semantics from the NKI API stubs (nki.isa.register_alloc,
register_move, register_load, register_store, nc_find_index8; nki.language.while_loop).
"""

from __future__ import annotations

import numpy as np

from . import core, vector_ops
from .access import read
from .tensor import Tensor

_NOT_FOUND = 0xFFFFFFFF


class Register:
    """nisa.VirtualRegister: an int the kernel moves, loads from and stores to memory."""

    __slots__ = ("value",)

    def __init__(self, value: int | None = None):
        self.value = value

    def _get(self) -> int:
        if self.value is None:
            raise ValueError("a virtual register was read before anything was moved or loaded into it")
        return int(self.value)

    def __index__(self) -> int:
        return self._get()

    __int__ = __index__

    def __bool__(self) -> bool:
        return self._get() != 0

    def __repr__(self) -> str:
        return f"<register {self.value}>"


def _int(src) -> int:
    if isinstance(src, Register):
        return src._get()
    if isinstance(src, Tensor):
        vals = np.asarray(read(src, None, None)).reshape(-1)
        if vals.size != 1:
            raise ValueError(f"a register holds one value; the tensor has {vals.size} elements")
        return int(vals[0])
    return int(src)


def register_alloc(x=None, **kw) -> Register:
    return Register(None if x is None else _int(x))


def register_move(dst: Register, src, **kw) -> None:
    dst.value = _int(src)


def register_load(dst: Register, src, **kw) -> None:
    core.ctx_site()  # pending allocations are committed before the read
    dst.value = _int(src)


def register_store(dst, src, **kw) -> None:
    vector_ops.memset(_int(src), dst=dst, engine="gpsimd")


def while_loop(init, body_fun, *args, **kw) -> None:
    r = init
    while _int(r) != 0:
        r = body_fun(r, *args)


def nc_find_index8(dst, data, vals, **kw):
    """Per partition: the index (in the flattened free dims) of the first occurrence of each of 8 values,
    0xFFFFFFFF (0xFFFF for uint16) when absent."""
    ctx, line, depth = core.ctx_site()
    d = core.fvals(data, None, line)
    v = core.fvals(vals, None, line)
    d2 = d.reshape(d.shape[0], -1)
    v2 = v.reshape(v.shape[0], -1)[:, :8]
    hit = d2[:, None, :] == v2[:, :, None]  # [P, 8, F]
    first = hit.argmax(axis=2)
    sentinel = 0xFFFF if dst.st.dt.name == "uint16" else _NOT_FOUND
    r = np.where(hit.any(axis=2), first, sentinel).astype(np.float64)
    return core.emit(ctx, "nc_find_index8", "vector", line, depth, r, dst=dst, dtype=dst.st.dt,
                     srcs=[data, vals], exact_from=dst.st.dt)


def nc_match_replace8(dst, data, vals, imm, dst_idx=None, **kw):
    """Per partition, for each of the 8 values in turn: its first occurrence in `data` (flattened free dims)
    becomes `imm`; `dst` gets the result, `dst_idx` the matched indices (as nc_find_index8 writes them). A
    value repeated in `vals` (two equal maxima from max8) takes the next occurrence, since the first was
    already replaced."""
    ctx, line, depth = core.ctx_site()
    d = core.fvals(data, None, line)
    v = core.fvals(vals, None, line)
    d2 = d.reshape(d.shape[0], -1).copy()
    v2 = v.reshape(v.shape[0], -1)[:, :8]
    rows = np.arange(d2.shape[0])
    idx = np.empty(v2.shape, np.float64)
    sentinel = 0xFFFF if dst_idx is not None and dst_idx.st.dt.name == "uint16" else _NOT_FOUND
    rep = np.float32(imm)
    for j in range(v2.shape[1]):
        hit = d2 == v2[:, j:j + 1]
        found = hit.any(axis=1)
        first = hit.argmax(axis=1)
        idx[:, j] = np.where(found, first, sentinel)
        d2[rows[found], first[found]] = rep
    if dst_idx is not None:
        core.emit(ctx, "nc_match_replace8", "vector", line, depth, idx, dst=dst_idx, dtype=dst_idx.st.dt,
                  srcs=[data, vals], exact_from=dst_idx.st.dt)
    return core.emit(ctx, "nc_match_replace8", "vector", line, depth, d2.reshape(d.shape), dst=dst,
                     dtype=dst.st.dt, srcs=[data, vals])


def nonzero_with_count(dst, src, index_offset=0, padding_val=-1, **kw):
    """GpSimd: on partitions 0, 16, ..., 112 only, the indices of nonzero elements (+ index_offset), then
    padding_val, then the count in the extra last slot; the other partitions of dst are left as they were."""
    ctx, line, depth = core.ctx_site()
    off, pad = _int(index_offset), _int(padding_val)
    for p in range(0, src.shape[0], 16):
        row = core.fvals(src[p:p + 1], None, line).reshape(-1)
        nz = np.nonzero(row)[0]
        r = np.full(row.size + 1, float(pad))
        r[: nz.size] = nz + off
        r[-1] = nz.size
        core.emit(ctx, "nonzero_with_count", "gpsimd", line, depth, r.reshape(1, -1), dst=dst[p:p + 1],
                  dtype=dst.st.dt, srcs=[src], exact_from=dst.st.dt)
    return dst


def nc_stream_shuffle(dst, src, shuffle_mask, **kw):
    """Vector Engine cross-partition move within each 32-partition quadrant: dst partition q*32+i takes src
    partition q*32+mask[i]; mask value 255 leaves dst partition i unmodified (nki.isa.nc_stream_shuffle)."""
    ctx, line, depth = core.ctx_site()
    mask = [_int(m) for m in shuffle_mask]
    if len(mask) != 32:
        raise ValueError(f"nc_stream_shuffle: shuffle_mask has {len(mask)} entries, not 32")
    rows = dst.shape[0]
    pairs = [(p, p - p % 32 + mask[p % 32]) for p in range(rows) if mask[p % 32] != 255]
    for p, q in pairs:
        if q >= src.shape[0]:
            raise IndexError(f"nc_stream_shuffle: dst partition {p} reads src partition {q} of {src.shape[0]}")
    used = sorted({q for _, q in pairs})
    if len(used) == src.shape[0]:
        v2 = core.fvals(src, None, line).reshape(src.shape[0], -1)
        read_row = v2.__getitem__
    else:  # only the partitions the mask names are read (the others may hold nothing yet)
        got = {q: core.fvals(src[q:q + 1], None, line).reshape(-1) for q in used}
        read_row = got.__getitem__
    free = int(np.prod(src.shape[1:])) if len(src.shape) > 1 else 1
    out = np.zeros((rows, free), np.float32)
    keep = np.zeros(rows, bool)
    for p, q in pairs:
        out[p] = read_row(q)
        keep[p] = True
    out = out.reshape((rows,) + tuple(dst.shape[1:]))
    sel = None if keep.all() else np.broadcast_to(keep.reshape((rows,) + (1,) * (len(dst.shape) - 1)), dst.shape)
    return core.emit(ctx, "nc_stream_shuffle", "vector", line, depth, out, dst=dst, dtype=dst.st.dt, srcs=[src],
                     mask=None if sel is None else np.array(sel), exact_from=src.st.dt)


def core_barrier(*args, **kw) -> None:
    """A barrier between the logical cores of an LNC launch: nothing to wait for with one program; with
    several, the simulator runs the programs one after another and cannot honour it (a tool limit)."""
    ctx = core.context.current()
    n = 1
    for g in ctx.grid or ():
        n *= int(g)
    if n > 1:
        raise core.UnsupportedAPI("nki.isa.core_barrier", "programs of a grid run one after another here",
                                  limit=True)


ISA = dict(core_barrier=core_barrier, nc_stream_shuffle=nc_stream_shuffle, nonzero_with_count=nonzero_with_count, register_alloc=register_alloc, register_move=register_move, register_load=register_load,
           register_store=register_store, nc_find_index8=nc_find_index8, nc_match_replace8=nc_match_replace8,
           VirtualRegister=Register)
