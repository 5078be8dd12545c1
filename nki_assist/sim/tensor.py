"""Tensors: a `Storage` (one allocation in HBM, SBUF or PSUM) and `Tensor` views onto it.

A view keeps, per storage dimension, either a fixed integer or a logical range (start, step, n) that may
reach outside the storage; reads and writes clip to the storage and report the out-of-bounds part unless
a mask excludes it (legacy `mask=` semantics). Every access goes through `read`/`write`, which also keep
a per-element written mask (uninitialized reads, unwritten outputs) and, for legacy `affine_range`
loops, the iteration that last wrote each element (write conflicts and loop-carried reads).
"""

from __future__ import annotations

import math
import operator
import sys
import weakref

import numpy as np

from . import block_life, block_store, context, liveness, provenance
from .dtypes import DType, exposed, sentinel
from .indexing import DynSlice, Idx, Mask
from .views import locate, resolve  # noqa: F401 (resolve: dma_geometry imports it from here)

ON_CHIP = ("sbuf", "psum")


class SimShapeError(ValueError):
    """Operand shapes that cannot work together (reported as a kernel shape error)."""


# -- storage ---------------------------------------------------------------------------------------
class Storage:
    __slots__ = ("data", "written", "all_written", "dt", "buffer", "shape", "pax", "name", "line", "seq",
                 "wtag", "counted", "bytes_pp", "banks", "role", "ctx", "alias", "acc_line", "holes", "skipped",
                 "log", "nf", "blk", "parts", "ivx",
                 "__weakref__")

    def __del__(self):
        try:
            if self.counted:
                release(self)
        except Exception:  # interpreter shutdown
            pass

    @property
    def size(self) -> int:
        return _prod(self.shape)


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def allocate(shape, dt: DType, buffer: str, *, line: int | None, name: str | None = None, pax: int = 0,
             data: np.ndarray | None = None, written: bool = False, pending: bool = False,
             role: str = "tile", quiet: bool = False, blocks: int | None = None) -> Storage:
    """New storage (NaN/sentinel-filled unless `data` is given); on-chip ones are checked and counted.
    `blocks`: physical tiles of a modular direct allocation (fewer than the tensor's block dims)."""
    ctx = context.current()
    if type(shape) is not tuple:
        shape = tuple(int(d) for d in shape)
    st = Storage()
    st.ctx = ctx
    st.counted = False
    st.dt = dt
    st.buffer = buffer
    st.shape = shape
    st.pax = pax
    st.name = name or (ctx.lhs_name(line) if line else None)
    st.line = line
    st.acc_line = None
    st.seq = next(ctx.alloc_seq)
    st.wtag = None
    st.role = role
    st.alias = None
    st.bytes_pp = 0
    st.banks = 0
    st.written = None
    st.holes = False  # a masked write left positions unwritten on purpose (unwritten.py)
    st.skipped = None
    st.nf = None  # sanitizer taint: the fault whose NaN/Inf this storage holds (provenance.py)
    st.log = None if buffer in ON_CHIP else provenance.WriteLog()  # HBM: store log
    st.blk = None
    st.parts = None
    st.ivx = -1  # no last-use interval (liveness.py) until counted in SBUF
    if buffer in ON_CHIP:  # checks and ledger first: a tile too large to simulate is still reported
        release_site(ctx)
        _check_tile(st, ctx, line, quiet)
        if ctx.legacy and pax > 0 and blocks is None and st.bytes_pp:
            block_life.track(ctx, st)  # one block counted now; the blocks in use at once after the run
        if blocks is not None and st.bytes_pp:
            logical = _prod(shape[:pax]) or 1
            if blocks < logical:
                st.banks = st.banks * blocks // logical if st.buffer == "psum" else 0
                st.bytes_pp = st.bytes_pp * blocks // logical
        if ctx.legacy and ctx.loops:
            ctx.loops[-1].scope.append(st)
        if pending:
            ctx.pending.append(st)
        else:
            commit(st, line)
    if st.blk is not None and data is None and not written and block_store.ENABLED:
        block_store.enable(st, ctx)  # one small array per block, made when first used
        return st
    if data is None:
        data = np.full(shape, sentinel(dt), dtype=dt.store)
    st.data = data
    # `written` is None once every element has been written (the common case for op results).
    st.written = None if written else np.zeros(shape, dtype=bool)
    st.all_written = written or data.size == 0
    return st


_GEOMETRY: dict = {}  # (shape, partition axis) -> (partitions, free elements, blocks)


def _check_tile(st: Storage, ctx, line, quiet: bool = False) -> None:
    """Partition and PSUM-bank limits of a new tile; `quiet` for results derived from an operand that
    was already reported (one root cause, one finding)."""
    tgt = ctx.target
    shape = st.shape
    if not shape:
        return
    geo = _GEOMETRY.get((shape, st.pax))
    if geo is None:
        if len(_GEOMETRY) > 4096:  # a long-lived process (language server) sees many shapes
            _GEOMETRY.clear()
        pax = st.pax
        geo = _GEOMETRY[(shape, pax)] = (shape[pax] if pax < len(shape) else 1, _prod(shape[pax + 1:]),
                                         _prod(shape[:pax]))
    parts, free, blocks = geo
    st.bytes_pp = blocks * free * st.dt.itemsize
    if parts > tgt.partitions and not quiet:
        ctx.report("SIM101", line,
                   f"{st.buffer.upper()} tile {list(shape)} puts {parts} rows on the partition axis; "
                   f"a NeuronCore has {tgt.partitions} partitions.",
                   shape=list(shape), partitions=parts, limit=tgt.partitions, buffer=st.buffer)
    if st.buffer == "psum":
        free_bytes = free * st.dt.itemsize
        st.banks = blocks * max(1, math.ceil(free_bytes / tgt.psum_bank_bytes))
        limit = tgt.psum_bank_bytes if tgt.moving_fmax <= 512 else tgt.psum_bytes_per_partition
        if free_bytes > limit and not quiet:
            ctx.report("SIM102", line,
                       f"PSUM tile {list(shape)} {st.dt.name} needs {free_bytes} B per partition; a PSUM bank "
                       f"holds {tgt.psum_bank_bytes} B ({tgt.psum_bank_bytes // 4} fp32) on {tgt.name}.",
                       shape=list(shape), bytes_per_partition=free_bytes, bank_bytes=tgt.psum_bank_bytes)


def commit(st: Storage, line) -> None:
    """Count a live on-chip storage in the ledger and check the capacity limits."""
    if st.counted or st.buffer not in ON_CHIP:
        return
    ctx = st.ctx
    st.counted = True
    tgt = ctx.target
    pk = ctx.peaks
    if st.buffer == "sbuf":
        ctx.sbuf_live += st.bytes_pp
        if ctx.sbuf_live > pk.sbuf_bytes_per_partition:  # the ledger's peak; liveness.settle replaces it (and
            pk.sbuf_bytes_per_partition = ctx.sbuf_live  # sets sbuf_line), keeping this one as evidence
        liveness.opened(st)
        # over budget while Python holds the tiles is only a suspicion (liveness.settle decides by last use);
        # one tile larger than the budget fits under no allocation
        budget = tgt.sbuf_usable_bytes_per_partition
        if st.bytes_pp > budget:
            ctx.report("SIM104", st.line,
                       f"this tile alone needs {st.bytes_pp} B per partition ({list(st.shape)} {st.dt.name}); "
                       f"{tgt.name} has {budget} B usable of {tgt.sbuf_bytes_per_partition} B.",
                       live_bytes_per_partition=ctx.sbuf_live, tile_bytes_per_partition=st.bytes_pp,
                       budget_bytes_per_partition=budget, shape=list(st.shape))
    else:
        ctx.psum_live += st.bytes_pp
        ctx.psum_banks_live += st.banks
        if ctx.psum_live > pk.psum_bytes_per_partition:
            pk.psum_bytes_per_partition = ctx.psum_live
        if ctx.psum_banks_live > pk.psum_banks:
            pk.psum_banks = ctx.psum_banks_live
            pk.psum_line = st.line
        if ctx.psum_banks_live > tgt.psum_banks:
            ctx.report("SIM103", st.line,
                       f"{ctx.psum_banks_live} PSUM banks are live with this allocation of {list(st.shape)}; "
                       f"a NeuronCore has {tgt.psum_banks} banks of {tgt.psum_bank_bytes} B per partition.",
                       live_banks=ctx.psum_banks_live, banks=tgt.psum_banks, shape=list(st.shape))


def release(st: Storage) -> None:
    if not st.counted:
        return
    st.counted = False
    ctx = st.ctx
    if st.buffer == "sbuf":
        ctx.sbuf_live -= st.bytes_pp
        if st.ivx >= 0:
            liveness.released(st)
    else:
        ctx.psum_live -= st.bytes_pp
        ctx.psum_banks_live -= st.banks


def release_site(ctx) -> None:
    """Before allocating at a site (the kernel call chain) again, release the previous loop iteration's tiles.

    Re-allocation at the same site means a new iteration of the loop around it. The tile allocated there
    last time, and the tiles allocated after it further down the same loop body, belong to the previous
    iteration; those held only by a local variable of the kernel frame (about to be rebound) are dead:
    release them now rather than when Python rebinds the names (one buffer per loop body, as the NKI
    allocator does). Tiles also referenced elsewhere (a list, a second variable) stay live.
    """
    prev = ctx.sites.get(ctx.last_chain)
    frame = ctx.last_frame
    if prev is None or frame is None or not frame.f_code.co_flags & 0x1:  # CO_OPTIMIZED: function frame
        return
    ref, pseq = prev
    line = ctx.last_chain[0]
    refs = [ref]
    body = ctx.loop_body.get(line)
    if body is not None:
        fid = id(frame)
        for seq, ln, fr, r in reversed(ctx.alloc_log):
            if seq <= pseq:
                break
            if fr == fid and line < ln <= body[1]:
                refs.append(r)
    snapshot = None
    for r in refs:
        old = r()
        # A tile nothing else holds (only `old` and the getrefcount argument) is no kernel local: skip it
        # without building the f_locals snapshot (the common case for tiles already rebound).
        if old is None or not old.st.counted or sys.getrefcount(old) < 3:
            old = None
            continue
        if snapshot is None:
            snapshot = frame.f_locals
            values = tuple(snapshot.values())
        local = False
        for v in values:
            if v is old:
                local = True
                break
        v = None
        # held by: `old`, the getrefcount argument, the frame local, the f_locals snapshot and `values`
        if local and sys.getrefcount(old) <= 5:
            release(old.st)
        old = None
    if snapshot is not None:
        values = None
        if sys.version_info < (3, 13):  # 3.13+ returns a write-through proxy (PEP 667)
            snapshot.clear()  # the cached snapshot would otherwise hold extra references


def bind_site(ctx, t: "Tensor") -> None:
    if t.st.buffer in ON_CHIP:
        key = ctx.last_chain
        ref = weakref.ref(t)
        ctx.sites[key] = (ref, t.st.seq)
        if key:
            log = ctx.alloc_log
            log.append((t.st.seq, key[0], id(ctx.last_frame), ref))
            if len(log) > 4096:
                log[:] = [e for e in log if (x := e[3]()) is not None and x.st.counted]


def commit_pending(ctx) -> None:
    if ctx.pending:
        pend, ctx.pending = ctx.pending, []
        for st in pend:
            commit(st, st.line)


# -- views -----------------------------------------------------------------------------------------
_WHOLE: dict = {}  # shape -> desc of a whole-storage view


_WHOLE_RES = (Ellipsis, None, True)


# `t[...] = value` is an instruction (copy, memset, or an op result landing in t); language.py, which
# models those, registers it here so this module does not import the layer above it.
_ASSIGN: list = [None]


_AP: list = [None]


def register_ap(fn) -> None:
    _AP[0] = fn


def register_assign(fn) -> None:
    _ASSIGN[0] = fn


class Tensor:
    """A view of a storage (what kernels hold: HBM arguments, tiles, slices of them)."""

    __slots__ = ("st", "desc", "fancy", "shape", "_res", "fresh", "origin", "operand", "__weakref__")

    def __init__(self, st: Storage, desc=None, fancy=None, shape=None):
        self.st = st
        self._res = None
        self.operand = None  # cached trace Operand
        if desc is None and fancy is None:
            shape = st.shape
            desc = _WHOLE.get(shape)
            if desc is None:
                desc = _WHOLE[shape] = tuple((0, 1, d) for d in shape)
            self._res = _WHOLE_RES  # the whole storage
        self.desc = desc
        self.fancy = fancy  # (storage index arrays, view shape) for non-affine / transposing indices
        if shape is None:
            shape = tuple(e[2] for e in desc if type(e) is tuple)
        self.shape = shape
        self.fresh = False  # result of an op not yet bound to a destination
        self.origin = None  # (op, storages read) for accumulation checks

    # -- metadata ----------------------------------------------------------------------------------
    @property
    def dtype(self):

        return exposed(self.st.dt.name)

    @property
    def buffer(self):
        return self.st.buffer

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return _prod(self.shape)

    @property
    def name(self):
        return self.st.name

    def __len__(self):
        return self.shape[0] if self.shape else 0

    def __repr__(self):
        return f"<{self.st.buffer} tensor {self.st.name or ''} {list(self.shape)} {self.st.dt.name}>"

    def __bool__(self):
        raise TypeError("a tensor has no truth value on the device (data-dependent control flow is not "
                        "supported by the NKI compiler)")

    def __iter__(self):
        raise TypeError("iterating over a tensor is not supported; index it with a loop variable")

    def is_whole(self) -> bool:
        return self.fancy is None and self.shape == self.st.shape and all(
            type(e) is tuple and e[0] == 0 and e[1] == 1 for e in self.desc)

    # -- indexing ----------------------------------------------------------------------------------
    def __getitem__(self, key) -> "Tensor":
        return index(self, key)

    def __setitem__(self, key, value) -> None:
        dst = index(self, key)
        if value is dst or (isinstance(value, Tensor) and value.origin == ("iadd-done", dst.st)):
            return  # `t[i] += x` already wrote through the view
        _ASSIGN[0](dst, value)

    def reshape(self, *shape, **kw) -> "Tensor":
        if not shape and "shape" in kw:  # t.reshape(shape=(...))
            shape = (kw.pop("shape"),)
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(int(s) for s in shape)
        if -1 in shape:
            known = _prod(s for s in shape if s != -1)
            shape = tuple(self.size // known if s == -1 else s for s in shape)
        if _prod(shape) != self.size:
            raise SimShapeError(f"cannot reshape {list(self.shape)} to {list(shape)}")
        if not self.is_whole():
            raise context.UnsupportedAPI("reshape of a sliced view", "reshape the whole tensor", limit=True)
        st = self.st
        block_store.densify(st)  # a block-dimension tile reshaped as a whole: one array again
        al = Storage()
        for f in ("dt", "buffer", "name", "line", "seq", "role", "ctx", "bytes_pp", "banks"):
            setattr(al, f, getattr(st, f))
        al.counted = False
        al.pax = 0
        al.shape = shape
        al.data = st.data.reshape(shape)
        al.written = None if st.written is None else st.written.reshape(shape)
        al.all_written = st.all_written
        al.holes = st.holes
        al.skipped = None if st.skipped is None else st.skipped.reshape(shape)
        al.wtag = None
        al.acc_line = None
        al.log = None  # stores through a reshaped alias are not logged
        al.nf = st.nf
        al.blk = None
        al.parts = None
        al.ivx = -1  # its uses extend the original's interval (liveness.used follows alias)
        al.alias = st  # keeps the original alive (and counted) while the alias lives
        return Tensor(al)

    def view(self, dtype):
        raise context.UnsupportedAPI("tensor.view", "reinterpreting a tensor as another dtype", limit=True)

    def ap(self, *a, **k):
        return _AP[0](self, *a, **k)  # access_pattern.py (it builds on this module)


def _norm_key(key, ndim):
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = ndim - (len(key) - 1)
        key = key[:i] + (slice(None),) * fill + key[i + 1:]
    return key


def index(t: Tensor, key) -> Tensor:
    if isinstance(key, Mask):
        raise context.UnsupportedAPI("masking an operand by indexing it with a predicate (tile[mask])", limit=True)
    if t.fancy is not None:
        raise context.UnsupportedAPI("indexing a tensor that was itself indexed by a transposing or "
                                     "non-affine nl.arange expression", limit=True)
    dims = [i for i, e in enumerate(t.desc) if type(e) is tuple]  # storage dims visible in the view
    key = _norm_key(key, len(dims))
    if len(key) > len(dims):
        raise IndexError(f"too many indices ({len(key)}) for a tensor of shape {list(t.shape)}")
    # Idx components: convert to slices when each is `start + step*i` on its own, increasing axis.
    idx_pos = [k.single_axis() if isinstance(k, Idx) else None for k in key]
    has_idx = any(isinstance(k, Idx) for k in key)
    if has_idx:
        axes = [p[3] for p in idx_pos if p is not None]
        fast = all(p is not None for k, p in zip(key, idx_pos) if isinstance(k, Idx)) and axes == sorted(set(axes))
        if not fast:
            return _fancy_index(t, key, dims)
    desc = list(t.desc)
    ints: list[int] = []
    for j, k in enumerate(key):
        sd = dims[j]
        start, step, n = desc[sd]
        if isinstance(k, Idx):
            c, s, m, _ = k.single_axis()
            desc[sd] = (start + step * c, step * s, m)
        elif isinstance(k, slice) or isinstance(k, DynSlice):
            if isinstance(k, DynSlice):
                k = k.as_slice()
            a, b, c = k.start, k.stop, k.step
            c = 1 if c is None else operator.index(c)
            if c <= 0:
                raise context.UnsupportedAPI("negative or zero slice steps")
            a = 0 if a is None else operator.index(a)
            b = n if b is None else operator.index(b)
            if a < 0:
                a += n
            if b < 0:
                b += n
            m = max(0, -(-(b - a) // c))
            desc[sd] = (start + step * a, step * c, m)
        elif k is None:
            raise context.UnsupportedAPI("None / np.newaxis in a tensor index")
        elif isinstance(k, Tensor):
            raise context.UnsupportedAPI("indexing with a tensor (dynamic/indirect access)",
                                         "use .ap(vector_offset=...) on hardware", limit=True)
        else:
            v = operator.index(k)
            if v < 0:
                v += n
            desc[sd] = start + step * v
            ints.append(sd)
    if ints and t.st.buffer in ON_CHIP:
        _keep_tile_2d(t.st, desc, ints)
    return Tensor(t.st, tuple(desc))


def _keep_tile_2d(st: Storage, desc: list, ints: list) -> None:
    """An on-chip tile keeps a free dimension: `t[:, j]` of a [P, F] tile is [P, 1], not [P] (NKI tiles are
    at least 2-D; AWS's flash attention indexes `l_buffer[:, i]` and then `[:, 0]` of that)."""
    pax = st.pax
    if len(st.shape) < 2 or type(desc[pax]) is not tuple:
        return
    if sum(1 for e in desc if type(e) is tuple) >= 2:
        return
    free = [sd for sd in ints if sd > pax]
    if free:
        sd = free[-1]
        desc[sd] = (desc[sd], 1, 1)


def _fancy_index(t: Tensor, key, dims) -> Tensor:
    if any(not isinstance(k, Idx) and isinstance(k, (slice, DynSlice)) for k in key):
        raise context.UnsupportedAPI("mixing slices with transposing nl.arange indices",
                                     "err_unsupported_mixing_basic_advanced_tensor_indexing")
    arrays = []
    for k in key:
        arrays.append(k.values() if isinstance(k, Idx) else np.int64(operator.index(k)))
    shape = np.broadcast_shapes(*[np.shape(a) for a in arrays])
    if len(key) < len(dims):
        raise context.UnsupportedAPI("partial indexing with nl.arange expressions", limit=True)
    full = []
    j = 0
    for e in t.desc:
        if type(e) is tuple:
            start, step, _ = e
            full.append(np.broadcast_to(start + step * np.asarray(arrays[j]), shape))
            j += 1
        else:
            full.append(np.broadcast_to(np.int64(e), shape))
    return Tensor(t.st, None, fancy=tuple(full), shape=tuple(shape))


_WHOLE_KEYS: dict = {}
