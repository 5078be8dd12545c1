"""Per-block storage of legacy block-dimension tiles (`nl.ndarray((86, 2, nl.par_dim(128), 1024))`).

The hardware holds only the blocks a kernel has in use; the simulator used to hold every block of such a
tile as one NumPy array, so the compiler-emitted NKIBench kernels (a dozen kernel-scope tiles of hundreds of
blocks each) needed gigabytes at their benchmark sizes. Here each block is its own small storage (a "part":
data, written mask, affine-loop tags), created when an instruction first touches it, and dropped when the
kernel's own structure proves that nothing touches it again (`block_scope.py`: every use indexes the block by
the loop variables of one nest, so a block is dead when that nest's iteration ends).

An access that fixes every block index reaches one part; any other access (a slice across blocks, a reshape,
an index outside the block grid) turns the tile back into one array first (`densify`), so values, masks and
findings stay those of the whole-array model.
"""

from __future__ import annotations

import ast
import os
import sys
import types
import weakref

import numpy as np

from . import block_scope
from .dtypes import sentinel

# False: every block tile is one array, the model this replaces (tests and benchmarks.block_tiles compare them)
ENABLED = os.environ.get("NKI_ASSIST_DENSE_BLOCKS", "") != "1"


class Blocks:
    """The parts of one block-dimension storage: block coordinates -> part storage."""

    __slots__ = ("grid", "inner", "parts", "fill", "filled", "chain", "dead", "part_bytes")

    def __init__(self, st):
        self.grid = st.shape[: st.pax]
        self.inner = st.shape[st.pax:]
        self.parts: dict[tuple, object] = {}
        self.fill = sentinel(st.dt)  # value of a block nothing has written (a whole-tile fill replaces it)
        self.filled = False  # the fill counts as written (nl.zeros(...)), not as never-written memory
        self.chain: tuple = ()  # ((loop header line, block dim), ...) from block_scope; () when not provable
        self.dead: set = set()  # chain coordinates whose blocks were dropped
        n = 1
        for d in self.inner:
            n *= d
        self.part_bytes = n * st.dt.store.itemsize


class PartView:
    """A view of one part, shaped like the tensor view it stands for (what views.resolve reads)."""

    __slots__ = ("st", "desc", "fancy", "shape", "_res")

    def __init__(self, st, desc, fancy, shape):
        self.st, self.desc, self.fancy, self.shape, self._res = st, desc, fancy, shape, None

    def is_whole(self) -> bool:
        return self.fancy is None and self.shape == self.st.shape and all(
            type(e) is tuple and e[0] == 0 and e[1] == 1 for e in self.desc)


def enable(st, ctx) -> None:
    """Give a new on-chip block-dimension storage per-block parts instead of one array, and when the
    kernel's source proves when its blocks die (block_scope.py), register it to drop them then."""
    b = st.parts = Blocks(st)
    st.data = None
    st.written = None
    st.all_written = False
    frame = ctx.last_frame
    if frame is None or st.line is None or frame.f_lineno != st.line:
        return
    name = ctx.lhs_name(st.line)
    if name is None:
        return
    key = (frame.f_code, st.line)
    chains = ctx.__dict__.setdefault("block_chains", {})
    found = chains.get(key)
    if found is None:
        tree = ctx.__dict__.get("block_tree")
        if tree is None:
            try:
                tree = ctx.block_tree = ast.parse("\n".join(ctx.source_lines))
            except (SyntaxError, ValueError):
                tree = ctx.block_tree = ast.Module(body=[], type_ignores=[])
        found, roots = block_scope.chain(tree, st.line, name, frame.f_code.co_name)
        if found and not all(_is_nki(_lookup(frame, r)) for r in roots):
            found = ()  # a block passed to something other than NKI could be kept and used later
        chains[key] = found
    found = found[: next((i for i, c in enumerate(found) if c[2] >= st.pax), len(found))]
    if not found:
        return
    b.chain = tuple((lo, d) for lo, _hi, d in found)
    drops = ctx.__dict__.setdefault("block_drops", {})
    entry = (weakref.ref(st), found, id(frame))
    lo, hi, _ = found[-1]
    for ln in range(lo, hi + 1):
        drops.setdefault(ln, []).append(entry)


def _lookup(frame, name: str):
    g = frame.f_globals
    if frame.f_code.co_flags & 0x1 and name in frame.f_code.co_varnames:  # a function local (`import ... as nl`)
        snapshot = frame.f_locals
        obj = snapshot.get(name)
        if sys.version_info < (3, 13):
            snapshot.clear()  # the cached snapshot would hold references to every local (tensor.release_site)
        return obj
    return g.get(name, g.get("__builtins__", {}).get(name) if isinstance(g.get("__builtins__"), dict) else None)


def _is_nki(obj) -> bool:
    """An NKI module or function of the simulator's shims (what `nl`, `nisa`, `nki.isa` resolve to in a run)."""
    if obj is None:
        return False
    if isinstance(obj, types.ModuleType):
        return bool(getattr(obj, "__nki_assist_shim__", False))
    return (getattr(obj, "__module__", None) or "").startswith("nki_assist.sim")


def end_iteration(ctx, frame) -> None:
    """Loop `frame` finished an iteration: drop the blocks of the tiles whose chain ends at this loop."""
    entries = ctx.block_drops.get(frame.line)
    if not entries:
        return
    loops = ctx.loops
    keep = []
    for entry in entries:
        ref, found, owner = entry
        st = ref()
        if st is None:
            continue
        keep.append(entry)
        m = len(found)
        if st.parts is None or len(loops) < m:
            continue
        nest = loops[-m:]
        if nest[-1] is not frame or any(
                f.owner != owner or f.start_seq < st.seq or not lo <= f.line <= hi
                for f, (lo, hi, _) in zip(nest, found)):
            continue
        drop(st, tuple(f.value for f in nest))
    entries[:] = keep


def part_view(t):
    """The part view of tensor view `t` of a block storage, or None when `t` does not fix one block."""
    st = t.st
    b = st.parts
    pax = st.pax
    grid = b.grid
    coords = []
    if t.fancy is not None:
        for a, d in zip(t.fancy[:pax], grid):
            if a.size == 0:
                return None
            v = int(a.flat[0])
            if not 0 <= v < d or (a.size > 1 and not (a == v).all()):
                return None
            coords.append(v)
        fancy = t.fancy[pax:]
        desc = None
    else:
        for e, d in zip(t.desc[:pax], grid):
            if type(e) is not int or not 0 <= e < d:
                return None
            coords.append(e)
        desc = t.desc[pax:]
        fancy = None
    key = tuple(coords)
    part = b.parts.get(key)
    if part is None:
        part = _materialise(st, b, key)
    return PartView(part, desc, fancy, t.shape)


def _materialise(st, b: Blocks, key: tuple):
    if b.chain and tuple(key[d] for _, d in b.chain) in b.dead:
        raise RuntimeError(f"internal: block {key} of {st.name or 'a block tile'} was dropped as dead but is used "
                           "again (nki_assist/sim/block_scope.py)")
    part = st.__class__()
    for f in ("dt", "buffer", "name", "line", "seq", "role", "ctx", "nf"):
        setattr(part, f, getattr(st, f))
    part.shape = b.inner
    part.pax = 0
    part.counted = False
    part.bytes_pp = part.banks = 0
    part.ivx = -1
    part.alias = part.acc_line = part.skipped = part.log = part.blk = part.parts = part.wtag = None
    part.holes = False
    part.data = np.full(b.inner, b.fill, dtype=st.dt.store)
    part.all_written = b.filled or part.data.size == 0
    part.written = None if part.all_written else np.zeros(b.inner, dtype=bool)
    b.parts[key] = part
    ctx = st.ctx
    ctx.block_host_bytes = getattr(ctx, "block_host_bytes", 0) + b.part_bytes
    return part


def fill(st, value) -> None:
    """A whole-tile constant fill (nl.zeros, nl.full): every block, present or future, holds `value`."""
    b = st.parts
    b.fill = value
    b.filled = True
    for part in b.parts.values():
        part.data[...] = value
        part.all_written, part.written = True, None


def drop(st, values: tuple) -> None:
    """The iteration of the chain's loops with these variable values ended: its blocks are dead."""
    b = st.parts
    if b is None:
        return
    dims = [d for _, d in b.chain]
    b.dead.add(values)
    gone = [k for k in b.parts if tuple(k[d] for d in dims) == values]
    for k in gone:
        del b.parts[k]
    if gone:
        ctx = st.ctx
        ctx.block_host_bytes -= len(gone) * b.part_bytes


def densify(st) -> None:
    """Back to one array for the whole tile (an access across blocks): parts copied in, the rest as the fill."""
    b = st.parts
    if b is None:
        return
    data = np.full(st.shape, b.fill, dtype=st.dt.store)
    written = np.full(st.shape, b.filled, dtype=bool)
    wtag = None
    for key, part in b.parts.items():
        data[key] = part.data
        written[key] = True if part.all_written else part.written
        if part.wtag is not None:
            if wtag is None:
                wtag = np.zeros(st.shape, np.int32)
            wtag[key] = part.wtag
    ctx = st.ctx
    ctx.block_host_bytes -= len(b.parts) * b.part_bytes
    st.parts = None
    st.data = data
    st.all_written = bool(written.all())
    st.written = None if st.all_written else written
    st.wtag = wtag


def host_bytes(ctx) -> int:
    """Bytes of block data the simulator holds now."""
    return getattr(ctx, "block_host_bytes", 0)
