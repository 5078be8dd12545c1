"""Per-block lifetimes of legacy block-dimension tiles (`nl.ndarray((32, 7, nl.par_dim(128), 1024))`).

The NKI compiler gives each block of a block-dimension tile its own lifetime: a block is live from its first
use to its last, so a kernel-scope tensor whose blocks are used one loop iteration at a time needs one block
of SBUF, not all of them (the compiler-emitted NKIBench kernels declare every intermediate that way). The
ledger therefore counts one block when such a tile is allocated, every read and write records which blocks
it touched and when, and after the run `settle` sweeps the intervals: the most blocks open at once, beyond
the one already counted, are added to the peak, and SIM104/SIM103 are reported if that passes the budget.
"""

from __future__ import annotations

import itertools
import math
import weakref

import numpy as np

from ..findings import Severity


class BlockLife:
    __slots__ = ("first", "last", "block_bytes", "block_banks", "blocks_shape", "line", "shape", "buffer", "dtype",
                 "host_bytes", "storage")

    def __init__(self, st, nblocks: int):
        self.blocks_shape = tuple(st.shape[: st.pax])
        self.first = np.full(nblocks, -1, np.int64)
        self.last = np.full(nblocks, -1, np.int64)
        self.block_bytes = st.bytes_pp // nblocks
        self.block_banks = st.banks // nblocks if st.banks else 0
        self.line, self.shape, self.buffer, self.dtype = st.line, list(st.shape), st.buffer, st.dt.name
        self.host_bytes = math.prod(st.shape) * st.dt.store.itemsize  # all blocks as one array
        self.storage = weakref.ref(st)

    def max_open(self) -> int:
        used = self.first >= 0
        if not used.any():
            return 0
        starts = np.sort(self.first[used])
        ends = np.sort(self.last[used])
        # open at the moment of each start: starts so far minus intervals that ended before it
        return int(max(i + 1 - np.searchsorted(ends, s, side="left") for i, s in enumerate(starts)))


def track(ctx, st) -> None:
    """Called by allocate for an on-chip legacy tile with block dimensions: count one block from now on."""
    nblocks = math.prod(st.shape[: st.pax])
    if nblocks <= 1:
        return
    life = BlockLife(st, nblocks)
    st.blk = life
    st.bytes_pp = life.block_bytes
    if st.banks:
        st.banks = max(1, life.block_banks)
    lives = getattr(ctx, "block_lives", None)
    if lives is None:
        lives = ctx.block_lives = []
        ctx.block_clock = itertools.count()
    lives.append(life)


def touch(st, t) -> None:
    """Record that view `t` of block-tracked storage `st` is used now."""
    life = st.blk
    ctx = st.ctx
    now = next(ctx.block_clock)
    ranges = []
    if t.fancy is not None:
        for a in t.fancy[: st.pax]:
            ranges.append(range(int(a.min()), int(a.max()) + 1) if a.size else range(0))
    else:
        for e in t.desc[: st.pax]:
            if type(e) is tuple:
                start, step, n = e
                ranges.append(range(start, start + step * n, step) if n else range(0))
            else:
                ranges.append(range(e, e + 1))
    dims = life.blocks_shape
    if all(len(r) == 1 for r in ranges):
        flat = 0
        for r, d in zip(ranges, dims):
            v = r[0]
            if not 0 <= v < d:
                return
            flat = flat * d + v
        if life.first[flat] < 0:
            life.first[flat] = now
        life.last[flat] = now
        return
    idx = np.ravel_multi_index(np.ix_(*[np.asarray([v for v in r if 0 <= v < d], np.int64)
                                        for r, d in zip(ranges, dims)]), dims).reshape(-1)
    fresh = idx[life.first[idx] < 0]
    life.first[fresh] = now
    life.last[idx] = now


def settle(ctx, report) -> None:
    """After the run: add the blocks that were open at once to the peaks; report what no longer fits."""
    lives = getattr(ctx, "block_lives", None)
    if not lives:
        return
    pk, tgt = ctx.peaks, ctx.target
    # tiles allocated again at the same line are successive loop iterations, never live together: the
    # largest of them counts; different lines are added (an upper bound)
    by_site: dict[tuple, tuple] = {}
    for life in lives:
        extra = life.max_open() - 1
        if extra <= 0:
            continue
        unit = life.block_bytes if life.buffer == "sbuf" else life.block_banks
        if not unit:
            continue
        key = (life.buffer, life.line)
        if key not in by_site or extra * unit > by_site[key][0]:
            by_site[key] = (extra * unit, extra + 1, life)
    sbuf_extra = [v for (buf, _), v in by_site.items() if buf == "sbuf"]
    banks_extra = [v for (buf, _), v in by_site.items() if buf != "sbuf"]
    if sbuf_extra:
        total = pk.sbuf_bytes_per_partition + sum(b for b, _, _ in sbuf_extra)
        pk.sbuf_bytes_per_partition = total
        budget = tgt.sbuf_usable_bytes_per_partition
        if total > budget:
            b, n, life = max(sbuf_extra, key=lambda x: x[0])
            # a warning, like SIM103: the legacy compiler allocates block tiles itself and can fuse the loop
            # nests that use the blocks or spill them (NKIBench's compiler-emitted swiglu keeps 192 blocks of
            # an intermediate between two loop nests and runs)
            report("SIM104", life.line,
                   f"live SBUF reaches up to {total} B per partition: {n} blocks of {life.shape} {life.dtype} are in "
                   f"use at the same time ({life.block_bytes} B each); {tgt.name} has {budget} B usable of "
                   f"{tgt.sbuf_bytes_per_partition} B. The compiler has to fuse the loops that use these blocks "
                   "or spill them to HBM.",
                   live_bytes_per_partition=total, blocks_live=n, block_bytes_per_partition=life.block_bytes,
                   budget_bytes_per_partition=budget, shape=life.shape, _severity=Severity.WARNING)
    if banks_extra:
        total = pk.psum_banks + sum(b for b, _, _ in banks_extra)
        pk.psum_banks = total
        if total > tgt.psum_banks:
            b, n, life = max(banks_extra, key=lambda x: x[0])
            report("SIM103", life.line,
                   f"up to {total} PSUM banks are live: {n} blocks of {life.shape} are in use at the same time; a "
                   f"NeuronCore has {tgt.psum_banks} banks of {tgt.psum_bank_bytes} B per partition.",
                   live_banks=total, blocks_live=n, banks=tgt.psum_banks, shape=life.shape)


def host_bytes(ctx) -> int:
    """Host memory the simulator spends on block tiles now: those held as one array (accessed across blocks,
    or per-block storage off) in full, and the blocks held one by one (block_store.py)."""
    whole = 0
    for life in getattr(ctx, "block_lives", None) or ():
        st = life.storage()
        if st is not None and st.parts is None:
            whole += life.host_bytes
    return whole + ctx.block_host_bytes
