"""Value provenance during a run: who last wrote each output element, and where NaN/Inf first appeared.

Two mechanisms, both off the per-instruction fast path:

- **Store log** (always on, HBM tensors only). `access.write` calls `on_store` for every write into an
  HBM tensor: the store becomes a `StoreRecord` (kernel line, loop-variable values, region) and an int32
  map remembers, per element, the store that last wrote it. A store that replaces values an earlier
  store wrote, which nothing read in between, is an `Overlap` (reads of HBM tensors mark their elements
  as consumed: a read-modify-write is not an overlap). `coverage.py` turns the log into findings.
- **Sanitizer** (`ctx.sanitize`, a second run). Checking every instruction's result for NaN/Inf would
  tax every kernel; instead the runner checks once, at the end, whether an output holds non-finite values
  that a store wrote, and only then runs the kernel again with `ctx.sanitize` set. In that run
  `watch` looks at each instruction's result: NaN/Inf (or a finite fp32 result beyond the destination
  dtype's range) that no operand carried in is a new `Fault` (the first fault of a chain); values that
  an operand carried in inherit that operand's fault (a per-storage taint, `Storage.nf`), so the fault
  that reaches an output is its origin, not the last instruction that passed it on.
"""

from __future__ import annotations

import ast
import math
import sys

import ml_dtypes
import numpy as np

from ..contracts.provenance import Fault, OutputProvenance, Overlap, Provenance, StoreRecord
from .views import locate, resolve

MAX_RECORDS = 200_000  # stores recorded per output (a per-row store loop over a huge tensor stops here)
MAX_FAULTS = 64
UNKNOWN = -1  # taint of values whose origin is not a fault (never-written memory, an unwatched path)


# -- static facts ----------------------------------------------------------------------------------
def loop_variables(tree: ast.Module) -> dict[int, tuple[tuple[str, int], ...]]:
    """Line -> the `for` loops around it as (variable, header line), outermost first (simple names only)."""
    found: dict[int, list[tuple[int, str]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor)) and node.body and isinstance(node.target, ast.Name):
            for ln in range(node.body[0].lineno, (node.end_lineno or node.body[-1].lineno) + 1):
                found.setdefault(ln, []).append((node.lineno, node.target.id))
    return {ln: tuple((v, h) for h, v in sorted(loops)) for ln, loops in found.items()}


def dtype_max(name: str) -> float | None:
    try:
        return float(ml_dtypes.finfo(np.dtype(getattr(ml_dtypes, name, name))).max)
    except (TypeError, ValueError):
        return None


# -- iteration of the current instruction ----------------------------------------------------------
def current_iteration(ctx) -> tuple[tuple[str, int], ...]:
    """Values of the loop variables around the current kernel line (and the program id in a grid)."""
    out: list[tuple[str, int]] = []
    if ctx.grid:
        out += [("pid" if len(ctx.pid) == 1 else f"pid{k}", int(p)) for k, p in enumerate(ctx.pid)]
    line = ctx.last_chain[0] if ctx.last_chain else None
    names = ctx.loop_vars.get(line) if line is not None else None
    frame = ctx.last_frame
    if names and frame is not None:
        loc = frame.f_locals
        try:
            for name, _ in names:
                v = loc.get(name)
                if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                    out.append((name, int(v)))
        finally:
            if sys.version_info < (3, 13):  # the cached snapshot would hold extra references to tiles,
                loc.clear()  # which the allocator's release heuristic counts (tensor.release_site)
    return tuple(out)


# -- store log -------------------------------------------------------------------------------------
class WriteLog:
    """Per HBM tensor: store records, last-writer map (record index + 1; negative once read), overlaps."""

    __slots__ = ("writer", "records", "overlaps", "truncated")

    def __init__(self):
        self.writer: np.ndarray | None = None
        self.records: list[StoreRecord] = []
        self.overlaps: list[Overlap] = []
        self.truncated = False


def _box(key, m, shape) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """Region (start, stop) and step per storage dim of a resolved key (normalised slices and ints, as
    `tensor.resolve` makes them), narrowed by a mask over the sliced dims."""
    if key is Ellipsis:
        return tuple((0, n) for n in shape), (1,) * len(shape)
    box, steps, sl = [], [], []
    for k in key:
        if type(k) is slice:
            a, b, s = k.start, k.stop, k.step or 1
            cnt = (b - a + s - 1) // s if b > a else 0
            box.append((a, a + s * (cnt - 1) + 1) if cnt else (a, a))
            steps.append(s)
            sl.append(len(box) - 1)
        else:
            box.append((int(k), int(k) + 1))
            steps.append(1)
    if m is not None and m.ndim == len(sl) and m.any():
        for j, d in enumerate(sl):
            other = tuple(i for i in range(m.ndim) if i != j)
            hit = np.flatnonzero(m.any(axis=other) if other else m)
            a, s = box[d][0], steps[d]
            box[d] = (a + s * int(hit[0]), a + s * int(hit[-1]) + 1)
    return tuple(box), tuple(steps)


def _same(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    eq = old == new
    if old.dtype.kind == "f":
        eq |= np.isnan(old) & np.isnan(new)
    return eq


def on_store(st, key, m, value, line, fancy=None) -> None:
    """Record a write into HBM tensor `st` (called before the data is written). `key`/`m`/`value` as
    `access.write` uses them; `fancy` = the index arrays of a gathered write (its values already selected)."""
    log: WriteLog = st.log
    if log.truncated or (m is not None and not m.any()):
        return
    if len(log.records) >= MAX_RECORDS:
        log.truncated = True
        return
    ctx = st.ctx
    w = log.writer
    wid = len(log.records) + 1
    if w is None:  # int16 while the record ids fit (half the memory of a large output), then int32
        w = log.writer = np.zeros(st.shape, np.int16)
    elif wid > np.iinfo(w.dtype).max:
        w = log.writer = w.astype(np.int32)
    it = current_iteration(ctx)
    if fancy is not None:
        region = None
        prev = w[fancy]
        box = tuple((int(a.min()), int(a.max()) + 1) if a.size else (0, 0) for a in fancy)
        steps = (1,) * len(box)
    else:
        region = w[key]
        prev = region if m is None else region[m]
        box, steps = _box(key, m, st.shape)
    if np.ndim(prev) and np.count_nonzero(prev):  # earlier stores wrote here: compare (rare, computed now)
        if fancy is not None:
            old, new = st.data[fancy], value
        elif m is None:
            old, new = st.data[key], value
        else:
            old, new = st.data[key][m], np.broadcast_to(value, m.shape)[m]
        _overlap(log, st, line, it, box, np.asarray(prev), np.asarray(old), np.broadcast_to(new, np.shape(old)),
                 key, m, fancy)
    log.records.append(StoreRecord(line, it, box, steps, fancy is None and m is None))
    if fancy is not None:
        w[fancy] = wid
    elif m is None or not np.ndim(region):
        w[key] = wid
    else:
        region[m] = wid


def _overlap(log: WriteLog, st, line, it, box, prev, old, new, key, m, fancy) -> None:
    """One Overlap per earlier store whose still-unread elements this store writes again."""
    live = prev > 0
    if not live.any():
        return
    same = _same(old, new)
    wids = np.unique(prev[live])
    for pw in wids[:8].tolist():  # a per-row store loop can leave many writers under one block
        mine = prev == pw
        diff = mine & ~same
        pick = diff if diff.any() else mine  # name the first differing element, else the first rewritten one
        first = int(np.flatnonzero(pick.ravel())[0])
        before = log.records[pw - 1]
        olds = old[mine]
        if fancy is not None:
            index = tuple(int(a.ravel()[first]) for a in fancy)
        else:
            index = _storage_index(key, m, st.shape, first)
        log.overlaps.append(Overlap(line=line, iteration=it, prev_line=before.line,
                                    prev_iteration=before.iteration, elements=int(np.count_nonzero(mine)),
                                    differing=int(np.count_nonzero(diff)), index=index,
                                    same_region=before.box == box and before.line == line,
                                    prev_constant=bool(olds.size and (olds == olds.flat[0]).all())))


def _storage_index(key, m, shape, flat: int) -> tuple[int, ...]:
    """Storage coordinates of the `flat`-th selected element of a basic (masked) view."""
    if key is Ellipsis:
        key = tuple(slice(0, s, 1) for s in shape)
    view_shape = [len(range(*k.indices(n))) for k, n in zip(key, shape) if isinstance(k, slice)]
    if m is not None:
        flat = int(np.flatnonzero(m.ravel())[flat])
    vi = iter(np.unravel_index(flat, view_shape) if view_shape else ())
    out = []
    for k, n in zip(key, shape):
        if isinstance(k, slice):
            a, _, s = k.indices(n)
            out.append(a + s * int(next(vi)))
        else:
            out.append(int(k))
    return tuple(out)


def on_read(st, key) -> None:
    """An HBM tensor is read: values stored so far are consumed (a later store is no overlap)."""
    w = st.log.writer
    if w is not None:
        w[key] = -np.abs(w[key])


def output_provenance(st) -> OutputProvenance:
    log: WriteLog | None = st.log if st is not None else None
    if st is None:
        return OutputProvenance(None, ())
    if log is None:
        return OutputProvenance(st.name, tuple(st.shape))
    return OutputProvenance(st.name, tuple(st.shape), list(log.records), list(log.overlaps), log.truncated)


def collect(ctx, storages) -> Provenance:
    return Provenance([output_provenance(st) for st in storages], list(ctx.faults))


def stored_nonfinite(storages) -> bool:
    """Some output holds NaN/Inf that a store wrote (never-written elements hold NaN too: not those);
    checked once at the end of a run, so the stores themselves stay cheap."""
    for st in storages:
        if st is None or not st.dt.is_float or st.log is None or not st.log.records:
            continue
        bad = ~np.isfinite(st.data)  # no copy of the written values: a large output would hold it twice
        if not st.all_written:
            bad &= np.asarray(st.written)
        if bad.any():
            return True
    return False


# -- sanitizer -------------------------------------------------------------------------------------
def peek(t) -> tuple[np.ndarray, np.ndarray | None]:
    """Values of a view without any check, and the mask of its written positions (None: all written)."""
    st, key, inner, ok = locate(t)  # a block-dimension tile: the block that holds the view
    if t.fancy is not None:
        vals = st.data[key]
        w = None if st.all_written else st.written[key]
        return vals, (w if ok else (inner if w is None else w & inner))
    if ok:
        return st.data[key], (None if st.all_written else st.written[key])
    vals = np.zeros(t.shape, st.data.dtype)
    w = np.zeros(t.shape, bool)
    if inner is not None:
        vals[inner] = st.data[key]
        w[inner] = True if st.all_written else st.written[key]
    return vals, w


def _carried_taint(srcs, dst_st, unwritten: bool) -> int | None:
    """The taint of the first operand holding non-finite written values (UNKNOWN when the instruction read
    never-written memory); None when every operand is finite. An operand in the destination's own storage
    (an in-place op) has already been overwritten: its taint from before the write stands for it."""
    for s in srcs:  # a tainted operand first, without looking at values (the common case once NaN flow)
        st = getattr(s, "st", None)
        if st is not None and st.nf is not None:
            return st.nf
    for s in srcs:
        st = getattr(s, "st", None)
        if st is None or not st.dt.is_float or st is dst_st:
            continue
        vals, w = peek(s)
        if w is not None:
            if not w.all():
                unwritten = True
            vals = vals[w]
        if vals.size and not np.isfinite(vals).all():
            if st.nf is not None:
                return st.nf
            return None if st.role == "input" else UNKNOWN  # NaN/Inf in a kernel input: the load is the origin
    return UNKNOWN if unwritten else None


def watch(ctx, line, op: str, dst, m=None, srcs=(), raw=None) -> None:
    """Sanitizer hook after an instruction wrote `dst` (view, mask `m`); `raw` = its fp32 result before
    rounding into dst's dtype when the caller has it (tells a cast overflow from an arithmetic one)."""
    st = dst.st
    dt = st.dt
    unwritten, ctx.unwritten_read = ctx.unwritten_read, False
    vals, w = peek(dst)
    sel = w
    if m is not None:
        mm = np.broadcast_to(m, vals.shape) if m.shape != vals.shape else m
        sel = mm if sel is None else (sel & mm)
    if not dt.is_float:
        if raw is not None and np.asarray(raw).dtype.kind == "f" and dt.store.kind in "iu":
            _saturation(ctx, line, op, dst, np.asarray(raw), sel)
        return
    v = vals if sel is None else vals[sel]
    if not v.size or np.isfinite(v).all():
        if st.nf is not None and dst.is_whole() and sel is None:
            st.nf = None  # every value is finite again
        return
    taint = _carried_taint(srcs, st, unwritten)
    if taint is None:
        taint = _new_fault(ctx, line, op, dt, v, raw, sel, vals.shape)
    st.nf = taint
    log = st.log
    if log is not None and log.records and log.records[-1].line == line and taint is not None and taint >= 0:
        log.records[-1].fault = taint


def _new_fault(ctx, line, op, dt, v, raw, sel, shape) -> int:
    for i, f in enumerate(ctx.faults):  # the same line again (a later loop iteration): one fault, counted
        if f.line == line and f.op == op and f.dtype == dt.name and not f.saturated:
            f.occurrences += 1
            return i
    if len(ctx.faults) >= MAX_FAULTS:
        return UNKNOWN
    nan = int(np.isnan(v).sum())
    inf = int(np.isinf(v).sum())
    mx = dtype_max(dt.name)
    kind, out_of_range, max_abs = "nonfinite", 0, None
    if raw is not None:
        r = np.asarray(raw, np.float32)
        if r.shape != tuple(shape):
            try:
                r = np.broadcast_to(r, shape)
            except ValueError:
                r = None
        if r is not None:
            r = r if sel is None else r[sel]
            fin = r[np.isfinite(r)]
            max_abs = float(np.abs(fin).max()) if fin.size else None
            if mx is not None and fin.size:
                out_of_range = int(np.count_nonzero(np.abs(fin) > mx))
            if out_of_range and np.isfinite(r).all():
                kind = "overflow"  # fp32 result finite, the rounding into dt left its range
    if op.startswith("dma_load") and kind == "nonfinite" and raw is None:
        kind = "input"
    ctx.faults.append(Fault(line=line, op=op, iteration=current_iteration(ctx), kind=kind, dtype=dt.name,
                            dtype_max=mx, nan=nan, inf=inf, out_of_range=out_of_range,
                            max_abs=None if max_abs is None or not math.isfinite(max_abs) else max_abs))
    return len(ctx.faults) - 1


def _saturation(ctx, line, op, dst, raw, sel) -> None:
    info = np.iinfo(dst.st.dt.store)
    r = raw if sel is None or raw.shape != sel.shape else raw[sel]
    fin = np.rint(r[np.isfinite(r)].astype(np.float64))  # the engines round to nearest even, then clamp
    if not fin.size:
        return
    over = int(np.count_nonzero((fin > info.max) | (fin < info.min)))
    if over and len(ctx.faults) < MAX_FAULTS and not any(f.line == line and f.saturated for f in ctx.faults):
        ctx.faults.append(Fault(line=line, op=op, iteration=current_iteration(ctx), kind="overflow",
                                dtype=dst.st.dt.name, dtype_max=float(info.max), nan=0, inf=0, out_of_range=over,
                                max_abs=float(np.abs(fin).max()), saturated=True))
