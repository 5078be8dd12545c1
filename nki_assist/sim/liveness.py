"""Last-use liveness of SBUF tiles: the peak and SIM104 as a compiler's allocator sees them.

The ledger (tensor.commit/release) counts a tile from its allocation until Python drops it, and a variable holds
a tile until it is rebound: a chain like `a = x - m; b = a * r; c = b * g` keeps `a` and `b` counted long after
their last use, where the NKI compilers free a tile's space after its last read. So the ledger only says when SBUF
*may* be over budget. After the run each counted SBUF tile is an interval from its allocation to its last read
or write (a tile never used again ends where it starts), and the most bytes open at once is the peak: SIM104 is
reported only when that peak passes the budget, at the allocation that reached it. A single tile larger than the
budget is reported at once by the ledger (no allocator can place it). A direct allocation (`mod_alloc`) is the
kernel's own placement: it keeps its space until the ledger releases it.
"""

from __future__ import annotations

import itertools
from array import array

import numpy as np


class Intervals:
    """Compact per-allocation records: start and end clock, bytes per partition, a key into `meta`."""

    __slots__ = ("start", "end", "nbytes", "meta_ix", "meta", "_meta_of", "clock", "held")

    def __init__(self):
        self.start, self.end, self.nbytes, self.meta_ix = array("q"), array("q"), array("q"), array("l")
        self.meta: list[tuple] = []  # (line, shape, dtype name), interned: loops allocate the same tile again
        self._meta_of: dict[tuple, int] = {}
        self.clock = itertools.count()
        self.held: set[int] = set()  # direct allocations not yet released: they keep their space until then


def _of(ctx) -> Intervals:
    iv = ctx.sbuf_intervals
    if iv is None:
        iv = ctx.sbuf_intervals = Intervals()
    return iv


def opened(st) -> None:
    """A counted SBUF storage: its interval starts now (tensor.commit)."""
    iv = _of(st.ctx)
    key = (st.line, tuple(st.shape), st.dt.name)
    ix = iv._meta_of.get(key)
    if ix is None:
        ix = iv._meta_of[key] = len(iv.meta)
        iv.meta.append(key)
    now = next(iv.clock)
    st.ivx = len(iv.start)
    iv.start.append(now)
    iv.end.append(now)
    iv.nbytes.append(st.bytes_pp)
    iv.meta_ix.append(ix)


def hold(st) -> None:
    """A direct allocation (`ncc.sbuf.mod_alloc(...)`): the kernel placed it, so it occupies its space until
    released (the ledger's lifetime), not only to its last use."""
    if st.ivx >= 0:
        st.ctx.sbuf_intervals.held.add(st.ivx)


def released(st) -> None:
    iv = st.ctx.sbuf_intervals
    if iv is not None and st.ivx in iv.held:
        iv.held.discard(st.ivx)
        iv.end[st.ivx] = next(iv.clock)


def used(st) -> None:
    """A read or write of `st` (or of a reshaped alias of it): its interval extends to now."""
    while st.ivx < 0:
        st = st.alias
        if st is None:
            return
    iv = st.ctx.sbuf_intervals
    iv.end[st.ivx] = next(iv.clock)


def peak(ctx) -> tuple[int, tuple | None]:
    """(most bytes per partition open at once, (line, shape, dtype, bytes) of the allocation that reached it)."""
    iv = ctx.sbuf_intervals
    if iv is None or not len(iv.start):
        return 0, None
    start = np.frombuffer(iv.start, np.int64).astype(np.float64)
    end = np.frombuffer(iv.end, np.int64) + 0.5  # clocks are distinct: an interval ending before another starts
    nbytes = np.frombuffer(iv.nbytes, np.int64)
    times = np.concatenate([start, end])
    delta = np.concatenate([nbytes, -nbytes])
    order = np.argsort(times, kind="stable")
    live = np.cumsum(delta[order])
    at = int(np.argmax(live))
    alloc = int(order[at])  # the peak is reached at an allocation (a start event)
    if alloc >= len(iv.start):
        return int(live[at]), None
    return int(live[at]), (*iv.meta[iv.meta_ix[alloc]], int(iv.nbytes[alloc]))


def settle(ctx, report) -> None:
    """After the run: the peak by last use replaces the ledger's; SIM104 when it passes the budget."""
    iv = ctx.sbuf_intervals
    if iv is None:
        return
    for ix in iv.held:  # direct allocations still held when the kernel returned
        iv.end[ix] = next(iv.clock)
    iv.held.clear()
    top, where = peak(ctx)
    pk, tgt = ctx.peaks, ctx.target
    ledger = pk.sbuf_bytes_per_partition
    pk.sbuf_bytes_per_partition = top
    if where is not None:
        pk.sbuf_line = where[0]
    budget = tgt.sbuf_usable_bytes_per_partition
    if top > budget and where is not None:
        line, shape, dtype, nbytes = where
        report("SIM104", line,
               f"live SBUF reaches {top} B per partition with this allocation ({nbytes} B for {list(shape)} {dtype}), "
               f"counting each tile from its allocation to its last use; {tgt.name} has {budget} B usable of "
               f"{tgt.sbuf_bytes_per_partition} B.",
               live_bytes_per_partition=top, tile_bytes_per_partition=nbytes, budget_bytes_per_partition=budget,
               shape=list(shape), dtype=dtype, held_by_variables_bytes_per_partition=ledger)
